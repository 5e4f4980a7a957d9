"""Export a collection, or everything one job wrote, as JSON lines or CSV.

    python -m external_interface.storage.export posts --format csv --out posts.csv
    python -m external_interface.storage.export posts --job 20240101-ab12 --storage-url URL
    python -m external_interface.storage.export 20240101-ab12      # a job id: every collection

A target that is not a collection name is taken for a job id: the export then holds
that job's records of every collection, each with its ``collection`` (``_collection``
in CSV).

The store is ``STORAGE_URL`` unless ``--storage-url`` names another. Records are
deduplicated by key whatever the backend returns (the latest write wins, ``first_seen``
is the earliest), so a key written by several units or jobs is one line or one row.
``--job`` keeps the records a job wrote last: a key a later job rewrote belongs to it.

JSON lines keep each record whole (``key``, ``data``, ``job_id``, ``first_seen``,
``last_seen``; times in epoch seconds). CSV has one column per item field after
``_key``, ``_job_id``, ``_first_seen``, ``_last_seen`` (ISO 8601, UTC; item fields cannot
start with ``_``, so the names never clash); list and object values are JSON.
With ``--out``, the file appears whole or not at all.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import sys
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from external_interface.storage import ItemStore
from external_interface.storage.factory import store_from_url
from external_interface.storage.jsonl import fold_records

META_COLUMNS = ("_key", "_job_id", "_first_seen", "_last_seen")


def export_records(
    store: ItemStore, collection: str, job_id: str | None = None
) -> list[dict[str, Any]]:
    """The collection's records, one per key, sorted by key; only ``job_id``'s if given."""
    by_time = sorted(store.read(collection), key=lambda record: record["last_seen"])
    folded = fold_records(by_time)
    records = [folded[key] for key in sorted(folded)]
    return [r for r in records if job_id is None or r["job_id"] == job_id]


def export_job_records(store: ItemStore, job_id: str) -> list[dict[str, Any]]:
    """Every collection's records that ``job_id`` wrote last, each naming its collection."""
    return [
        {"collection": collection, **record}
        for collection in store.collections()
        for record in export_records(store, collection, job_id)
    ]


def write_jsonl(records: Iterable[dict[str, Any]], out: TextIO) -> None:
    for record in records:
        out.write(json.dumps(record, ensure_ascii=False) + "\n")


def write_csv(records: Sequence[dict[str, Any]], out: TextIO) -> None:
    """One row per record; the item columns are every field seen, in first-seen order."""
    fields = list(dict.fromkeys(name for record in records for name in record["data"]))
    by_job = any("collection" in record for record in records)
    writer = csv.writer(out)
    writer.writerow([*(["_collection"] if by_job else []), *META_COLUMNS, *fields])
    for record in records:
        meta = [*([record["collection"]] if by_job else []), record["key"], record["job_id"]]
        times = [_iso(record["first_seen"]), _iso(record["last_seen"])]
        writer.writerow([*meta, *times, *(_cell(record["data"].get(f)) for f in fields)])


def export(store: ItemStore, target: str, fmt: str, out: TextIO, job_id: str | None) -> int:
    """Write the export of a collection or a job to ``out``; returns how many records."""
    records = select(store, target, job_id)
    if fmt == "csv":
        write_csv(records, out)
    else:
        write_jsonl(records, out)
    return len(records)


def select(store: ItemStore, target: str, job_id: str | None) -> list[dict[str, Any]]:
    """A collection's records, or a job's across collections; an unknown target is an error."""
    if job_id is not None or _is_collection(store, target):
        return export_records(store, target, job_id)
    records = export_job_records(store, target)
    if not records:
        raise SystemExit(f"export: {target!r} is neither a collection nor a job with items")
    return records


def _is_collection(store: ItemStore, target: str) -> bool:
    try:
        return target in store.collections()
    except TypeError:  # a write-only sink cannot list: take the target as a collection
        return True


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    store = store_from_url(args.storage_url or _default_url())
    try:
        if args.out is None:
            count = export(store, args.collection, args.format, sys.stdout, args.job)
        else:
            count = _export_to_file(store, args, Path(args.out))
    finally:
        store.close()
    where = args.out or "stdout"
    print(f"exported {count} {args.collection} records to {where}", file=sys.stderr)
    return 0


def _export_to_file(store: ItemStore, args: argparse.Namespace, path: Path) -> int:
    """Write next to the target, then rename: a reader never sees half an export."""
    partial = path.with_name(path.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8", newline="") as out:
            count = export(store, args.collection, args.format, out, args.job)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return count


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m external_interface.storage.export",
        description="Export a collection, or a job's items, deduplicated by key.",
    )
    parser.add_argument("collection", metavar="COLLECTION|JOB_ID",
                        help="an item collection (e.g. posts) or a job id")
    parser.add_argument("--format", choices=("jsonl", "csv"), default="jsonl")
    parser.add_argument("--out", help="file to write (default: stdout)")
    parser.add_argument("--storage-url", help="item store URL (default: STORAGE_URL)")
    parser.add_argument("--job", metavar="JOB_ID", help="only records last written by this job")
    return parser


def _default_url() -> str:
    """The configured store; imported here so that importing this module reads nothing."""
    from config import get_settings

    return get_settings().storage.url


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def _cell(value: Any) -> Any:
    """Scalars as they are (None as empty); lists and objects as JSON."""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


if __name__ == "__main__":
    sys.exit(main())
