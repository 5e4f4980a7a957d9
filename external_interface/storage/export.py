"""Export a collection, or everything one job wrote, streamed from the store to a file.

    python -m external_interface.storage.export posts --format csv --out posts.csv
    python -m external_interface.storage.export posts --format parquet --out posts.parquet \\
        --fields title,likes --since 2026-11-01 --job 20240101-ab12 --storage-url URL
    python -m external_interface.storage.export 20240101-ab12      # a job id: every collection

A target that is not a collection name is taken for a job id: the export then holds
that job's records of every collection, each with its ``collection`` (``_collection``
in CSV and Parquet).

The store is ``STORAGE_URL`` unless ``--storage-url`` names another (SQLite, JSON lines,
MongoDB, PostgreSQL, or a sink that answers reads). Records stream from the store's
``read`` (one per key, sorted by key) to the file, so memory stays flat however many
there are; CSV and Parquet read twice, first for their columns, unless ``--fields``
names them (Parquet always, for the columns' types). ``--job`` keeps the records a job
wrote last (a key a later job rewrote belongs to it); ``--since`` those last seen at or
after a moment (ISO 8601, UTC unless it says otherwise, or epoch seconds); ``--fields``
keeps those item fields, in that order.

Formats: ``jsonl`` (one item a line, its fields as the parser made them, and
``_collection`` in a job's export; with ``--envelope`` each record whole: ``key``,
``data``, ``job_id``, ``first_seen``, ``last_seen``, times in epoch seconds), ``json``
(the same records in one array), ``csv``
(``_key``, ``_job_id``, ``_first_seen``, ``_last_seen`` in ISO 8601, then one column per
item field; item fields cannot start with ``_``, so the names never clash) and ``parquet``
(the CSV's columns, times as UTC timestamps; needs the ``parquet`` extra). With ``--out``,
the file appears whole or not at all.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Generator, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from external_interface.storage import ItemStore
from external_interface.storage.export_formats import (
    Columns,
    Record,
    flat,
    import_pyarrow,
    selected,
    write_csv,
    write_json,
    write_jsonl,
    write_parquet,
)
from external_interface.storage.factory import store_from_url
from utils.names import did_you_mean, listed

FORMATS = ("jsonl", "csv", "json", "parquet")


@dataclass(frozen=True)
class Selection:
    """What to export: a collection's records, or a job's across every collection."""

    collections: tuple[str, ...]
    by_job: bool = False
    job_id: str | None = None
    since: float | None = None
    fields: tuple[str, ...] | None = None
    envelope: bool = True  # JSON records whole (key, data, job, times); False: the items

    def records(self, store: ItemStore) -> Generator[Record, None, None]:
        """A fresh stream of the selected records, one per key, sorted by key."""
        for collection in self.collections:
            for record in store.read(collection, job_id=self.job_id, since=self.since):
                record = selected(record, self.fields)
                yield {"collection": collection, **record} if self.by_job else record


def select(store: ItemStore, target: str, job_id: str | None = None,
           since: float | None = None, fields: Sequence[str] | None = None) -> Selection:
    """A collection, or a job's records across collections; an unknown target is an error."""
    chosen = tuple(fields) if fields else None
    if job_id is not None or _is_collection(store, target):
        return Selection((target,), False, job_id, since, chosen)
    job = Selection(tuple(store.collections()), True, target, since, chosen)
    probe = job.records(store)
    try:
        if next(probe, None) is None:
            known = job.collections
            raise SystemExit(f"{target!r} is neither a collection{did_you_mean(target, known)} "
                             f"nor a job with items (collections: {listed(known)}; crawlchain "
                             "jobs lists the jobs)")
    finally:
        probe.close()
    return job


def _is_collection(store: ItemStore, target: str) -> bool:
    try:
        return target in store.collections()
    except TypeError:  # a write-only sink cannot list: take the target as a collection
        return True


def export(store: ItemStore, selection: Selection, fmt: str, out: TextIO | Path) -> int:
    """Write the selection to ``out`` (a text stream, or a path for Parquet); how many."""
    if fmt == "parquet":
        if not isinstance(out, Path):
            raise SystemExit("export: --format parquet writes a file: give --out FILE")
        columns = Columns.scan(selection.records(store), selection.fields)
        return write_parquet(selection.records(store), out, columns)
    if isinstance(out, Path):
        with out.open("w", encoding="utf-8", newline="") as stream:
            return export(store, selection, fmt, stream)
    if fmt == "csv":
        fields = selection.fields
        columns = (Columns(list(fields), selection.by_job) if fields
                   else Columns.scan(selection.records(store)))
        return write_csv(selection.records(store), out, columns)
    writers: dict[str, Callable[[Iterator[Record], TextIO], int]] = {
        "jsonl": write_jsonl, "json": write_json}
    records = selection.records(store)
    return writers[fmt](records if selection.envelope else map(flat, records), out)


def parse_since(text: str) -> float:
    """Epoch seconds, or an ISO 8601 date or time (UTC unless it carries an offset)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--since {text!r}: expected epoch seconds or ISO 8601 "
            "(2026-11-01, 2026-11-01T12:00:00+01:00)") from None
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def parse_fields(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    if not names:
        raise argparse.ArgumentTypeError(f"--fields {text!r}: expected names like title,likes")
    return names


def main(argv: Sequence[str] | None = None,
         parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> int:
    args = parser(parser_class).parse_args(argv)
    if args.gone or args.failed:
        raise SystemExit("--gone and --failed read the job ledger: run them as crawlchain "
                         "export JOB_ID --gone")
    if args.format == "parquet":
        import_pyarrow()  # say how to install it before reading anything
    store = store_from_url(args.storage_url or _default_url())
    try:
        selection = replace(select(store, args.collection, args.job, args.since, args.fields),
                            envelope=args.envelope)
        if args.out is None:
            count = export(store, selection, args.format, sys.stdout)
        else:
            count = _export_to_file(store, selection, args.format, Path(args.out))
    finally:
        store.close()
    where = args.out or "stdout"
    print(f"exported {count} {args.collection} records to {where}", file=sys.stderr)
    return 0


def _export_to_file(store: ItemStore, selection: Selection, fmt: str, path: Path) -> int:
    """Write next to the target, then rename: a reader never sees half an export."""
    partial = path.with_name(path.name + ".partial")
    try:
        count = export(store, selection, fmt, partial)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return count


def parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
           ) -> argparse.ArgumentParser:
    parser = parser_class(
        prog="crawlchain export",
        description="Export a collection, or a job's items, streamed from the store.",
    )
    parser.add_argument("collection", metavar="COLLECTION|JOB_ID",
                        help="an item collection (e.g. posts) or a job id")
    parser.add_argument("--format", choices=FORMATS, default="jsonl")
    parser.add_argument("--out", help="file to write (default: stdout; parquet needs a file)")
    parser.add_argument("--storage-url", help="item store URL (default: STORAGE_URL)")
    parser.add_argument("--job", metavar="JOB_ID", help="only records last written by this job")
    parser.add_argument("--since", type=parse_since, metavar="WHEN",
                        help="only records last seen at or after WHEN (ISO 8601 or epoch s)")
    parser.add_argument("--fields", type=parse_fields, metavar="A,B",
                        help="only these item fields, in this order")
    parser.add_argument("--envelope", action="store_true",
                        help="jsonl/json: each record whole (key, data, job_id, first_seen, "
                        "last_seen) instead of the item's fields")
    units = parser.add_argument_group(
        "a job's units instead of its items (crawlchain export JOB_ID --gone)")
    units.add_argument("--gone", action="store_true",
                       help="the units the job found gone: step, URL, reason")
    units.add_argument("--failed", action="store_true",
                       help="the units that failed for good: step, URL, error, reason")
    return parser


def _default_url() -> str:
    """The configured store; imported here so that importing this module reads nothing."""
    from config import get_settings

    return get_settings().storage.url


if __name__ == "__main__":
    sys.exit(main())
