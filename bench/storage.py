"""Item store throughput per backend and batch size: what buffering buys.

    python -m bench.storage --json

Writes fresh items (inserts) through ``upsert`` in batches of 1, 100 and 1,000, each
cell on an empty store in a temporary directory, until ``--max-items`` are written or
``--budget-s`` has passed, and reports items per second. A batch of 1 is what a
synchronous write per item costs; the larger batches show what a per-unit bulk write
or a buffer saves. MongoDB is measured only where ``MONGO_URI`` is set (a throwaway
database, dropped afterwards); PostgreSQL where ``POSTGRES_DSN`` (default: the local
server's database ``test``) answers, on a throwaway schema; otherwise each is ``null``.
The last line of ``--json`` output is::

    {"sqlite": {"1": items_per_s, "100": ..., "1000": ...}, "jsonl": {...}, "mongodb": null,
     "postgresql": {...}}
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import ClassVar

from external_interface.storage import Item, ItemStore
from external_interface.storage.jsonl import JsonlStore
from external_interface.storage.sqlite import SQLiteStore

BATCH_SIZES = (1, 100, 1000)

StoreFactory = Callable[[Path], AbstractContextManager[ItemStore]]


class BenchItem(Item):
    """About the size of a parsed post: a few short fields and a paragraph."""

    collection: ClassVar[str] = "bench"
    key_fields: ClassVar[tuple[str, ...]] = ("item_id",)

    item_id: int
    url: str
    title: str
    body: str
    likes: int


def make_items(count: int) -> list[BenchItem]:
    """Built before timing starts, so the figures are the store's, not pydantic's."""
    return [
        BenchItem(
            item_id=n,
            url=f"http://127.0.0.1:8000/post/{n}",
            title=f"post number {n}",
            body="lorem ipsum dolor sit amet " * 8,
            likes=n % 997,
        )
        for n in range(count)
    ]


def measure(store: ItemStore, items: list[BenchItem], batch_size: int, budget_s: float) -> float:
    """Items per second writing ``items`` in batches, stopping early past the budget."""
    written = 0
    started = time.perf_counter()
    while written < len(items):
        written += store.upsert("bench", items[written : written + batch_size])
        if time.perf_counter() - started >= budget_s:
            break
    return written / (time.perf_counter() - started)


@contextmanager
def sqlite_store(directory: Path) -> Iterator[ItemStore]:
    store = SQLiteStore(directory / "items.db")
    try:
        yield store
    finally:
        store.close()


@contextmanager
def jsonl_store(directory: Path) -> Iterator[ItemStore]:
    store = JsonlStore(directory / "items")
    try:
        yield store
    finally:
        store.close()


@contextmanager
def mongo_store(directory: Path) -> Iterator[ItemStore]:
    """A database of its own on ``MONGO_URI``, dropped when the cell is done."""
    from external_interface.storage.mongo import MongoStore, import_pymongo

    client = import_pymongo().MongoClient(os.environ["MONGO_URI"], tz_aware=True)
    store = MongoStore(client, f"crawlchain_bench_{uuid.uuid4().hex[:12]}")
    try:
        yield store
    finally:
        store.drop_database()
        store.close()


POSTGRES_DSN = "postgresql://postgres@127.0.0.1:5432/test"


def postgres_dsn() -> str | None:
    """``POSTGRES_DSN`` or the local server, if it answers; None otherwise."""
    dsn = os.environ.get("POSTGRES_DSN", POSTGRES_DSN)
    try:
        import psycopg
    except ImportError:
        print("  postgresql not measured: psycopg not installed (postgres extra)",
              file=sys.stderr)
        return None
    try:
        psycopg.connect(dsn, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        print(f"  postgresql not measured: {exc}", file=sys.stderr)
        return None
    return dsn


@contextmanager
def postgres_store(directory: Path) -> Iterator[ItemStore]:
    """A schema of its own on ``POSTGRES_DSN``, dropped when the cell is done."""
    from external_interface.storage.postgres import PostgresStore

    dsn = postgres_dsn() or POSTGRES_DSN
    store = PostgresStore(dsn, f"crawlchain_bench_{uuid.uuid4().hex[:12]}")
    try:
        yield store
    finally:
        store.drop_schema()
        store.close()


def run_backend(
    factory: StoreFactory,
    items: list[BenchItem],
    budget_s: float,
) -> dict[str, float]:
    """One figure per batch size, each on an empty store."""
    figures: dict[str, float] = {}
    for batch_size in BATCH_SIZES:
        with (
            tempfile.TemporaryDirectory(prefix="bench-storage-") as tmp,
            factory(Path(tmp)) as store,
        ):
            rate = measure(store, items, batch_size, budget_s)
        figures[str(batch_size)] = round(rate)
        print(f"  {factory.__name__} batch {batch_size}: {rate:,.0f} items/s", file=sys.stderr)
    return figures


def run(max_items: int, budget_s: float) -> dict[str, dict[str, float] | None]:
    """Every backend's figures; MongoDB's only where a server is configured."""
    items = make_items(max_items)
    mongo = run_backend(mongo_store, items, budget_s) if os.environ.get("MONGO_URI") else None
    postgres = run_backend(postgres_store, items, budget_s) if postgres_dsn() else None
    return {
        "sqlite": run_backend(sqlite_store, items, budget_s),
        "jsonl": run_backend(jsonl_store, items, budget_s),
        "mongodb": mongo,
        "postgresql": postgres,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.storage", description=__doc__)
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--max-items", type=int, default=20_000, help="items per cell, at most")
    parser.add_argument("--budget-s", type=float, default=2.0, help="seconds per cell, about")
    args = parser.parse_args(argv)
    results = run(args.max_items, args.budget_s)
    if args.json:
        print(json.dumps(results))
    else:
        for backend, figures in results.items():
            cells = "  ".join(f"{b:>5}: {v:>9,.0f}/s" for b, v in (figures or {}).items())
            print(f"{backend:<10} {cells or 'not measured (no server configured)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
