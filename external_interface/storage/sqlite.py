"""SQLite item store: the embedded default. WAL, one table, upsert on the key."""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from exceptions import StorageUnavailable
from external_interface.storage import Item
from utils.urls import redact_url

SCHEMA = """
CREATE TABLE IF NOT EXISTS items (
    collection TEXT NOT NULL,
    key        TEXT NOT NULL,
    data       TEXT NOT NULL,
    job_id     TEXT NOT NULL,
    first_seen REAL NOT NULL,
    last_seen  REAL NOT NULL,
    PRIMARY KEY (collection, key)
)
"""

WAL_CHECKPOINT_PAGES = 4000

UPSERT = """
INSERT INTO items (collection, key, data, job_id, first_seen, last_seen)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (collection, key) DO UPDATE SET
    data = excluded.data, job_id = excluded.job_id, last_seen = excluded.last_seen
"""


class SQLiteStore:
    """Items in one SQLite file; safe for many worker processes (WAL + busy timeout)."""

    def __init__(self, path: Path, busy_timeout_s: float = 10.0) -> None:
        self.path = path
        self.busy_timeout_s = busy_timeout_s
        path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = self._connect()
        self._stale = False

    def _connect(self) -> sqlite3.Connection:
        db = sqlite3.connect(self.path, timeout=self.busy_timeout_s, isolation_level=None,
                             check_same_thread=False)  # shared by a thread pool, under _lock
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        # A checkpoint every 4000 pages (16 MB of WAL), not SQLite's 1000: a crawl's
        # upserts land all over the key index, and a page changed four times between
        # checkpoints is copied back once (a quarter less CPU per item at 240k items).
        db.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_PAGES}")
        db.execute(SCHEMA)
        return db

    @classmethod
    def from_url(cls, url: str) -> SQLiteStore:
        """``sqlite:///relative.db`` or ``sqlite:////absolute.db``, optionally
        ``?busy_timeout_s=2`` (how long a write waits for another writer's lock)."""
        if not url.startswith("sqlite:///"):
            raise ValueError(f"STORAGE_URL: expected sqlite:///path, got {redact_url(url)!r}")
        path, _, query = url.removeprefix("sqlite:///").partition("?")
        options = dict(parse_qsl(query))
        unknown = set(options) - {"busy_timeout_s"}
        if unknown:
            raise ValueError(f"STORAGE_URL: unknown sqlite option(s) {sorted(unknown)} "
                             f"in {redact_url(url)!r}")
        return cls(Path(path), float(options.get("busy_timeout_s", 10.0)))

    def upsert(self, job_id: str, items: Sequence[Item]) -> int:
        now = time.time()
        rows = [
            (i.collection, i.item_key(), i.model_dump_json(), job_id, now, now) for i in items
        ]
        with self._lock:
            return self._upsert(rows)

    def _upsert(self, rows: list[tuple[str, str, str, str, float, float]]) -> int:
        try:
            if self._stale:
                self._db.close()
                self._db = self._connect()
                self._stale = False
            with self._transaction():
                self._db.executemany(UPSERT, rows)
        except sqlite3.OperationalError as exc:  # locked, read-only, disk full
            self._stale = True  # a connection opened read-only stays so: reopen next time
            raise StorageUnavailable(f"sqlite {self.path}: {exc}") from exc
        return len(rows)

    def count(self, collection: str) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM items WHERE collection = ?", (collection,)
            ).fetchone()
        return int(row[0])

    def collections(self) -> list[str]:
        with self._lock:
            rows = self._db.execute("SELECT DISTINCT collection FROM items ORDER BY collection")
            return [str(name) for (name,) in rows]

    def read(self, collection: str, *, job_id: str | None = None,
             since: float | None = None) -> Iterator[dict[str, Any]]:
        """Streamed from a connection of its own: one consistent snapshot (WAL), so a
        cursor never crosses a write made on the store's connection meanwhile."""
        query = "SELECT key, data, job_id, first_seen, last_seen FROM items WHERE collection = ?"
        params: list[str | float] = [collection]
        if job_id is not None:
            query, params = query + " AND job_id = ?", [*params, job_id]
        if since is not None:
            query, params = query + " AND last_seen >= ?", [*params, since]
        reader = sqlite3.connect(self.path, timeout=self.busy_timeout_s)
        try:
            reader.execute("BEGIN")  # one snapshot from the first row to the last
            for key, data, written_by, first_seen, last_seen in reader.execute(
                    query + " ORDER BY key", params):
                yield {"key": key, "data": json.loads(data), "job_id": written_by,
                       "first_seen": first_seen, "last_seen": last_seen}
        finally:
            reader.close()

    def close(self) -> None:
        self._db.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction; the connection itself runs in autocommit mode."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")
