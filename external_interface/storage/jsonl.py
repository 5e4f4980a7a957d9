"""JSON lines item store: one append-only file per collection, folded by key on read.

An append is the cheapest durable write there is: one ``write`` and one ``fsync``
per batch, no index to maintain. A line is never rewritten, so a crash can at worst
tear the last line, which readers skip and the next append fences off with a newline.
The price is paid on read: ``count`` and ``read`` fold the whole file into one record
per key (the last write wins; ``first_seen`` is the earliest line's).

Several processes may append to the same file: each batch is written under an
exclusive ``flock``, so batches never interleave.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import sqlite3
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from exceptions import StorageUnavailable
from external_interface.storage import Item
from utils.urls import redact_url

COLLECTION_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


def fold_records(records: Iterable[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One record per key, from records in write order.

    The last write wins (data, job id, ``last_seen``) but ``first_seen`` is the
    earliest seen, which is what an upsert keeps in a store that can update in place.
    """
    folded: dict[str, dict[str, Any]] = {}
    for record in records:
        earlier = folded.get(record["key"])
        if earlier is not None:
            first_seen = min(earlier["first_seen"], record["first_seen"])
            record = {**record, "first_seen": first_seen}
        folded[record["key"]] = record
    return folded


class JsonlStore:
    """Items in ``<directory>/<collection>.jsonl``; each line is one written record."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    @classmethod
    def from_url(cls, url: str) -> JsonlStore:
        """``jsonl:///relative/dir`` or ``jsonl:////absolute/dir`` (as ``sqlite:``)."""
        if not url.startswith("jsonl:///"):
            raise ValueError("STORAGE_URL: expected jsonl:///directory, "
                             f"got {redact_url(url)!r}")
        return cls(Path(url.removeprefix("jsonl:///")))

    def upsert(self, job_id: str, items: Sequence[Item]) -> int:
        """Append one line per item, one fsync per collection: durable on return."""
        now = time.time()
        batches: dict[str, list[bytes]] = {}
        for item in items:
            batches.setdefault(item.collection, []).append(_line(job_id, item, now))
        try:
            for collection, lines in batches.items():
                self._append(self._path(collection), b"".join(lines))
        except OSError as exc:  # read-only, disk full, permission denied
            raise StorageUnavailable(f"jsonl {self.directory}: {exc}") from exc
        return len(items)

    def count(self, collection: str) -> int:
        return len(fold_records(self._lines(collection)))

    def collections(self) -> list[str]:
        return sorted(path.stem for path in self.directory.glob("*.jsonl"))

    def read(self, collection: str, *, job_id: str | None = None,
             since: float | None = None) -> Iterator[dict[str, Any]]:
        """One record per key, sorted by key (as the SQLite store reads), in bounded memory:
        the file is folded by key into a scratch SQLite file, then streamed from it.
        The filters apply to the folded record: a key a later job rewrote is that job's."""
        with tempfile.TemporaryDirectory(prefix="crawlchain-fold-") as scratch:
            fold = sqlite3.connect(Path(scratch) / "fold.db", isolation_level=None)
            try:
                fold.executescript(FOLD_SCHEMA)
                fold.execute("BEGIN")
                fold.executemany(FOLD_UPSERT, (
                    (r["key"], json.dumps(r, ensure_ascii=False), r["job_id"], r["first_seen"],
                     r["last_seen"]) for r in self._lines(collection)))
                fold.execute("COMMIT")
                yield from _folded(fold, job_id, since)
            finally:
                fold.close()

    def close(self) -> None:
        """Nothing to release: files are opened per batch."""

    def _path(self, collection: str) -> Path:
        """The collection's file; the name must not be able to leave the directory."""
        if not COLLECTION_NAME.fullmatch(collection):
            raise ValueError(f"jsonl: collection name {collection!r} is not a plain file name")
        return self.directory / f"{collection}.jsonl"

    def _append(self, path: Path, payload: bytes) -> None:
        """Append under an exclusive lock and fsync; fsync the directory on creation."""
        created = not path.exists()
        if created:
            self.directory.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _ends_torn(fd):
                payload = b"\n" + payload
            _write_all(fd, payload)
            os.fsync(fd)
        finally:
            os.close(fd)  # also releases the lock
        if created:
            _fsync_directory(self.directory)

    def _lines(self, collection: str) -> Iterator[dict[str, Any]]:
        """Every well-formed line of the collection's file, in write order."""
        try:
            handle = self._path(collection).open("rb")
        except FileNotFoundError:
            return
        with handle:
            for raw in handle:
                try:
                    record = json.loads(raw)
                except ValueError:  # a line torn by a crash mid-append
                    continue
                if isinstance(record, dict) and "key" in record:
                    yield record


FOLD_SCHEMA = """
PRAGMA journal_mode=OFF;
PRAGMA synchronous=OFF;
CREATE TABLE folded (key TEXT PRIMARY KEY, record TEXT NOT NULL, job_id TEXT NOT NULL,
                     first_seen REAL NOT NULL, last_seen REAL NOT NULL) WITHOUT ROWID;
"""
# the last write wins, but first_seen is the earliest line's (as fold_records folds)
FOLD_UPSERT = """
INSERT INTO folded VALUES (?, ?, ?, ?, ?)
ON CONFLICT (key) DO UPDATE SET record = excluded.record, job_id = excluded.job_id,
    first_seen = min(first_seen, excluded.first_seen), last_seen = excluded.last_seen
"""


def _folded(fold: sqlite3.Connection, job_id: str | None,
            since: float | None) -> Iterator[dict[str, Any]]:
    """The folded records in key order, filtered."""
    query, params = "SELECT record, first_seen FROM folded WHERE 1 = 1", list[str | float]()
    if job_id is not None:
        query, params = query + " AND job_id = ?", [*params, job_id]
    if since is not None:
        query, params = query + " AND last_seen >= ?", [*params, since]
    for record, first_seen in fold.execute(query + " ORDER BY key", params):
        yield {**json.loads(record), "first_seen": first_seen}


def _line(job_id: str, item: Item, now: float) -> bytes:
    """A full record: folding lines then needs no other state."""
    record = {
        "key": item.item_key(),
        "data": item.model_dump(mode="json"),
        "job_id": job_id,
        "first_seen": now,
        "last_seen": now,
    }
    return json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"


def _ends_torn(fd: int) -> bool:
    """Whether the file's last line lacks its newline (a crash mid-append)."""
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _write_all(fd: int, payload: bytes) -> None:
    """``os.write`` may write less than asked; loop until all of it is written."""
    view = memoryview(payload)
    while view:
        view = view[os.write(fd, view) :]


def _fsync_directory(directory: Path) -> None:
    """A new file survives a power cut only once its directory entry is synced too."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
