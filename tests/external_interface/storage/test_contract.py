"""The ItemStore contract, run against every backend; then each backend's outages.

SQLite, JSON lines and the HTTP sink (a real loopback server) always run; MongoDB runs
wherever ``MONGO_URI`` points at a server, on a throwaway database; PostgreSQL wherever
``POSTGRES_DSN`` (default: the local server, database ``test``) answers, on a throwaway
schema.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from exceptions import StorageUnavailable
from external_interface.storage import ItemStore
from external_interface.storage.factory import store_from_url
from external_interface.storage.http_sink import HttpSinkStore
from external_interface.storage.sqlite import SQLiteStore
from tests.external_interface.storage.postgres_support import postgres_store
from tests.external_interface.storage.support import Comment, Post, SinkHTTPServer, posts

if TYPE_CHECKING:
    from external_interface.storage.mongo import MongoStore

BACKENDS = ["sqlite", "jsonl", "http_sink", "mongodb", "postgresql"]


def _mongo_store() -> MongoStore:
    """A MongoStore on a database of its own, or a skip where no server is configured."""
    uri = os.environ.get("MONGO_URI")
    if not uri:
        pytest.skip("MONGO_URI not set: no MongoDB server here")
    from external_interface.storage.mongo import MongoStore, import_pymongo

    client = import_pymongo().MongoClient(uri, serverSelectionTimeoutMS=5000, tz_aware=True)
    return MongoStore(client, f"crawlchain_test_{uuid.uuid4().hex[:12]}")


@pytest.fixture(params=BACKENDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ItemStore]:
    """Each backend, empty, built the way workers build it where a URL suffices."""
    if request.param == "sqlite":
        built = store_from_url(f"sqlite:///{tmp_path / 'items.db'}")
    elif request.param == "jsonl":
        built = store_from_url(f"jsonl:///{tmp_path / 'items'}")
    elif request.param == "http_sink":
        built = store_from_url(request.getfixturevalue("sink_server").url)
    elif request.param == "postgresql":
        with postgres_store() as postgres:
            yield postgres
        return
    else:
        mongo = _mongo_store()
        yield mongo
        mongo.drop_database()
        mongo.close()
        return
    yield built
    built.close()


# --- the contract -------------------------------------------------------------------


def test_every_backend_satisfies_the_protocol(store: ItemStore) -> None:
    assert isinstance(store, ItemStore)


def test_upsert_returns_how_many_items_were_written(store: ItemStore) -> None:
    assert store.upsert("job-1", posts(1, 2, 3)) == 3


def test_an_empty_batch_writes_nothing(store: ItemStore) -> None:
    assert store.upsert("job-1", []) == 0
    assert store.count("posts") == 0


def test_a_batch_written_twice_leaves_one_record_per_key(store: ItemStore) -> None:
    store.upsert("job-1", posts(1, 2, 3))
    store.upsert("job-1", posts(1, 2, 3))
    keys = [record["key"] for record in store.read("posts")]
    assert keys == ["demo|1", "demo|2", "demo|3"]


def test_a_rewrite_keeps_first_seen_advances_last_seen_and_replaces_data(
    store: ItemStore,
) -> None:
    store.upsert("job-1", posts(1, title="old"))
    [before] = store.read("posts")
    time.sleep(0.02)
    store.upsert("job-2", posts(1, title="new"))
    [after] = store.read("posts")
    assert after["first_seen"] == before["first_seen"]
    assert after["last_seen"] > before["last_seen"]
    assert after["data"]["title"] == "new 1"
    assert after["job_id"] == "job-2"


def test_count_equals_distinct_keys(store: ItemStore) -> None:
    store.upsert("job-1", posts(1, 2))
    store.upsert("job-1", posts(2, 3, title="again"))
    store.upsert("job-2", posts(1, 3))
    assert store.count("posts") == 3


def test_read_gives_key_data_job_id_and_times(store: ItemStore) -> None:
    item = Post(site="demo", post_id=7, title="café ☕", tags=["a", "b"])
    store.upsert("job-7", [item])
    [record] = store.read("posts")
    assert record["key"] == "demo|7"
    assert record["data"] == item.model_dump(mode="json")
    assert record["job_id"] == "job-7"
    assert 0 < record["first_seen"] <= record["last_seen"] <= time.time() + 1


def test_collections_are_kept_apart(store: ItemStore) -> None:
    store.upsert("job-1", [*posts(1, 2), Comment(comment_id="c1", text="hi")])
    assert store.count("posts") == 2
    assert store.count("comments") == 1
    assert store.count("nothing_here") == 0


def test_read_keeps_the_records_a_job_wrote_last(store: ItemStore) -> None:
    store.upsert("job-1", posts(1, 2, 3))
    store.upsert("job-2", posts(2, 4))
    assert [r["key"] for r in store.read("posts", job_id="job-1")] == ["demo|1", "demo|3"]
    assert [r["key"] for r in store.read("posts", job_id="job-2")] == ["demo|2", "demo|4"]


def test_read_since_keeps_the_records_last_seen_at_or_after_it(store: ItemStore) -> None:
    store.upsert("job-1", posts(1, 2))
    time.sleep(0.02)
    store.upsert("job-1", posts(2, 3))
    [late] = [r for r in store.read("posts") if r["key"] == "demo|3"]
    kept = [r["key"] for r in store.read("posts", since=late["last_seen"])]
    assert kept == ["demo|2", "demo|3"]
    assert list(store.read("posts", since=time.time() + 60)) == []


def test_a_write_while_a_read_is_under_way_breaks_neither(store: ItemStore) -> None:
    store.upsert("job-1", posts(*range(50)))
    reading = store.read("posts")
    first = next(reading)
    assert store.upsert("job-2", posts(1000)) == 1
    rest = list(reading)
    assert first["key"] == "demo|0" and len(rest) in (49, 50)  # a snapshot, or the new key too
    assert store.count("posts") == 51


# --- the HTTP sink answering 503 ----------------------------------------------------------


def _sink(server: SinkHTTPServer, attempts: int = 5) -> HttpSinkStore:
    """A sink client with millisecond backoff, so retries cost the tests nothing."""
    return HttpSinkStore(server.url, attempts=attempts, backoff_s=0.01, backoff_max_s=0.05)


def test_the_sink_retries_through_a_few_503s_then_succeeds(
    sink_server: SinkHTTPServer,
) -> None:
    sink_server.sink.fail_with = [503, 503, 503]
    store = _sink(sink_server, attempts=5)
    assert store.upsert("job-1", posts(1, 2)) == 2
    assert len(sink_server.sink.posts_received) == 4
    assert len(set(sink_server.sink.posts_received)) == 1  # one batch, one key
    assert store.count("posts") == 2


def test_the_sink_raises_storage_unavailable_while_503_persists(
    sink_server: SinkHTTPServer,
) -> None:
    sink_server.sink.fail_always = 503
    store = _sink(sink_server, attempts=3)
    with pytest.raises(StorageUnavailable, match="HTTP 503") as raised:
        store.upsert("job-1", posts(1))
    assert raised.value.status == 503
    assert len(sink_server.sink.posts_received) == 3
    sink_server.sink.fail_always = None  # the outage ends: the task's retry lands
    assert store.upsert("job-1", posts(1)) == 1
    assert store.count("posts") == 1


# --- SQLite locked or read-only ---------------------------------------------------------


def test_a_locked_sqlite_file_raises_storage_unavailable_then_recovers(tmp_path: Path) -> None:
    path = tmp_path / "items.db"
    store = SQLiteStore(path, busy_timeout_s=0.1)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    with pytest.raises(StorageUnavailable, match="locked"):
        store.upsert("job-1", posts(1))
    other.execute("COMMIT")
    other.close()
    assert store.upsert("job-1", posts(1)) == 1
    assert store.count("posts") == 1


@contextmanager
def _read_only(path: Path) -> Iterator[None]:
    """Make a file read-only for a while; root ignores modes, so also ``chattr +i``."""
    os.chmod(path, 0o444)
    immutable = os.geteuid() == 0
    try:
        if immutable:
            _chattr("+i", path)
        yield
    finally:
        if immutable:
            _chattr("-i", path)
        os.chmod(path, 0o644)


def _chattr(flag: str, path: Path) -> None:
    try:
        done = subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True)
    except FileNotFoundError:
        pytest.skip("running as root, which ignores file modes, and chattr is missing")
    if done.returncode != 0:
        pytest.skip(f"running as root, which ignores file modes, and chattr failed: {done.stderr}")


def _written_and_closed(path: Path) -> None:
    """A database with one post, no connection left open (its WAL checkpointed away)."""
    store = SQLiteStore(path)
    store.upsert("job-1", posts(1))
    store.close()


def test_a_read_only_sqlite_file_raises_storage_unavailable(tmp_path: Path) -> None:
    path = tmp_path / "items.db"
    _written_and_closed(path)
    with _read_only(path):
        store = SQLiteStore(path)
        with pytest.raises(StorageUnavailable, match="readonly"):
            store.upsert("job-1", posts(2))
        store.close()
    fresh = SQLiteStore(path)
    assert fresh.upsert("job-1", posts(2)) == 1
    assert fresh.count("posts") == 2


def test_a_sqlite_store_opened_while_read_only_recovers_once_writable(tmp_path: Path) -> None:
    path = tmp_path / "items.db"
    _written_and_closed(path)
    with _read_only(path):
        store = SQLiteStore(path)
        with pytest.raises(StorageUnavailable):
            store.upsert("job-1", posts(2))
    assert store.upsert("job-1", posts(2)) == 1
