"""The export's file formats, each written one record at a time: JSON lines, CSV, JSON, Parquet.

A record arrives as the stores read it (``key``, ``data``, ``job_id``, ``first_seen``,
``last_seen``, and ``collection`` in a job's export) and is written at once, so an
export's memory does not grow with its size. CSV and Parquet need their columns before
the first row: the caller hands them a ``Columns``, found by a first pass over the
records (``Columns.scan``) unless ``--fields`` named them.

Parquet (pyarrow, the ``parquet`` extra) is written in row groups of ``ROW_GROUP``
records; item fields get the type their values share (bool, int64, float64, string),
and fields of mixed or nested values hold JSON text, as CSV cells do.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any, TextIO, cast

META_COLUMNS = ("_key", "_job_id", "_first_seen", "_last_seen")
ROW_GROUP = 10_000
Record = dict[str, Any]


@dataclass
class Columns:
    """The item fields to write, in order, and the kinds of value each was seen with."""

    fields: list[str]
    by_job: bool = False  # a job's export across collections: a collection column first
    kinds: dict[str, set[str]] = field(default_factory=dict)

    @classmethod
    def scan(cls, records: Iterable[Record], only: Sequence[str] | None = None) -> Columns:
        """Every field seen, in first-seen order (or ``only``), with its kinds of value."""
        kinds: dict[str, set[str]] = {name: set() for name in only or ()}
        by_job = False
        for record in records:
            by_job = by_job or "collection" in record
            for name, value in record["data"].items():
                if only is None or name in kinds:
                    kinds.setdefault(name, set()).add(_kind(value))
        return cls(list(kinds), by_job, kinds)


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    return "str" if isinstance(value, str) else "json"


def selected(record: Record, fields: Sequence[str] | None) -> Record:
    """The record with its data cut down to ``fields`` (in that order), if given."""
    if fields is None:
        return record
    data = record["data"]
    return {**record, "data": {name: data.get(name) for name in fields}}


def flat(record: Record) -> Record:
    """The item itself: its fields (and ``_collection`` in a job's export), without the
    store's envelope of key, job and times."""
    collection = {"_collection": record["collection"]} if "collection" in record else {}
    return {**collection, **record["data"]}


# -- text formats ---------------------------------------------------------------------
def write_jsonl(records: Iterable[Record], out: TextIO) -> int:
    """One record a line, as given (whole, or ``flat``); times in epoch seconds."""
    count = 0
    for count, record in enumerate(records, 1):  # noqa: B007 - the count is the result
        out.write(json.dumps(record, ensure_ascii=False) + "\n")
    return count


def write_json(records: Iterable[Record], out: TextIO) -> int:
    """One JSON array of records, written element by element."""
    count = 0
    out.write("[")
    for count, record in enumerate(records, 1):
        out.write(("\n" if count == 1 else ",\n") + json.dumps(record, ensure_ascii=False))
    out.write("\n]\n" if count else "]\n")
    return count


def write_csv(records: Iterable[Record], out: TextIO, columns: Columns) -> int:
    """Meta columns (ISO 8601 times, UTC) then one column per item field; lists and objects
    as JSON, null as empty."""
    writer = csv.writer(out)
    writer.writerow([*(["_collection"] if columns.by_job else []), *META_COLUMNS,
                     *columns.fields])
    count = 0
    for count, record in enumerate(records, 1):  # noqa: B007 - the count is the result
        data = record["data"]
        writer.writerow([*_meta(record, columns.by_job, iso), *(_cell(data.get(name))
                                                                 for name in columns.fields)])
    return count


def _meta(record: Record, by_job: bool, when: Any) -> list[Any]:
    return [*([record["collection"]] if by_job else []), record["key"], record["job_id"],
            when(record["first_seen"]), when(record["last_seen"])]


def iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


def _cell(value: Any) -> Any:
    """Scalars as they are (None as empty); lists and objects as JSON."""
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return "" if value is None else value


# -- Parquet --------------------------------------------------------------------------
def import_pyarrow() -> ModuleType:
    """pyarrow, or an ImportError that says how to install it."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise ImportError(
            "--format parquet needs pyarrow: pip install 'crawlchain[parquet]' "
            "(or: CRAWLCHAIN_EXTRAS=parquet ./control.sh setup)"
        ) from exc
    return cast(ModuleType, pyarrow)


def write_parquet(records: Iterable[Record], path: Path, columns: Columns,
                  row_group: int = ROW_GROUP) -> int:
    """Row groups of ``row_group`` records; the schema from ``columns``."""
    pa = import_pyarrow()
    schema = parquet_schema(pa, columns)
    count = 0
    with pa.parquet.ParquetWriter(str(path), schema, compression="zstd") as writer:
        rows: list[Record] = []
        for record in records:
            rows.append(record)
            if len(rows) >= row_group:
                writer.write_batch(_batch(pa, schema, rows, columns))
                count, rows = count + len(rows), []
        if rows or not count:
            writer.write_batch(_batch(pa, schema, rows, columns))
            count += len(rows)
    return count


def parquet_schema(pa: ModuleType, columns: Columns) -> Any:
    when = pa.timestamp("us", tz="UTC")
    meta = [("_key", pa.string()), ("_job_id", pa.string()), ("_first_seen", when),
            ("_last_seen", when)]
    fields = [(name, _arrow_type(pa, columns.kinds.get(name, set())))
              for name in columns.fields]
    return pa.schema([*([("_collection", pa.string())] if columns.by_job else []), *meta,
                      *fields])


def _arrow_type(pa: ModuleType, kinds: set[str]) -> Any:
    """The type every value of the field fits; JSON text where they share none."""
    kinds = kinds - {"null"}
    if kinds == {"bool"}:
        return pa.bool_()
    if kinds == {"int"}:
        return pa.int64()
    if kinds and kinds <= {"int", "float"}:
        return pa.float64()
    return pa.string()


def _batch(pa: ModuleType, schema: Any, rows: list[Record], columns: Columns) -> Any:
    """One record batch, built column by column."""
    micros = [round(r[t] * 1_000_000) for t in ("first_seen", "last_seen") for r in rows]
    half = len(rows)
    meta = [[r["key"] for r in rows], [r["job_id"] for r in rows], micros[:half],
            micros[half:]]
    if columns.by_job:
        meta.insert(0, [r["collection"] for r in rows])
    text = {name: schema.field(name).type == pa.string() for name in columns.fields}
    values = [[_text(r["data"].get(name)) for r in rows] if text[name] else
              [r["data"].get(name) for r in rows] for name in columns.fields]
    arrays = [pa.array(column, type=f.type) for column, f in zip([*meta, *values], schema,
                                                                  strict=True)]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _text(value: Any) -> Any:
    """A string column's value: strings as they are, other values as JSON, null as null."""
    if value is None or isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)
