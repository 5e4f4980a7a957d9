"""Storage outages on real workers: units retry, nothing is lost, nothing is doubled."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chains.demo import demo as declared_demo
from sandbox.cluster import Cluster, running_cluster
from sandbox.world import World, expected_keys
from tests.chains.recrawl_support import without_recrawl
from tests.external_interface.storage.support import SinkHTTPServer

pytestmark = pytest.mark.integration

demo = without_recrawl(declared_demo)
WORLD = World(seed=9)
PATIENT = {"TASK_MAX_RETRIES": "12"}  # outlasts a few seconds of outage


def assert_every_item_counted_and_stored_once(status: dict[str, Any],
                                              stored: dict[str, list[str]]) -> None:
    assert status["state"] == "finished" and status["totals"]["failed"] == 0, status["failures"]
    for collection, keys in expected_keys(WORLD).items():
        assert sorted(stored[collection]) == sorted(keys), collection
    assert status["totals"]["items"] == sum(len(v) for v in stored.values())


@pytest.fixture
def sink() -> Iterator[SinkHTTPServer]:
    server = SinkHTTPServer()
    threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_http_sink_answering_503_for_a_while_loses_nothing(
        tmp_path: Path, sink: SinkHTTPServer) -> None:
    sink.sink.fail_always = 503
    env = {**PATIENT, "STORAGE_URL": sink.url}
    with running_cluster(tmp_path, WORLD, extra_env=env) as cluster:
        job = cluster.launch(demo, page=1)
        cluster.wait_for(lambda: len(sink.sink.posts_received) >= 3, 60, "refused posts")
        time.sleep(2)
        sink.sink.fail_always = None
        status = job.wait(timeout=240)
    stored = {c: [r["key"] for r in sink.sink.records_of(c)] for c in expected_keys(WORLD)}
    assert status["totals"]["retried"] > 0
    assert_every_item_counted_and_stored_once(status, stored)


def hold_write_lock(db: Path, seconds: float) -> threading.Thread:
    """Another writer holds SQLite's write lock for a while, as a slow backup job would."""
    def hold() -> None:
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("BEGIN EXCLUSIVE")
        time.sleep(seconds)
        conn.execute("ROLLBACK")
        conn.close()

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    return thread


def sqlite_env(tmp_path: Path) -> dict[str, str]:
    return {**PATIENT, "STORAGE_URL": f"sqlite:///{tmp_path / 'items.db'}?busy_timeout_s=0.3"}


def started_job(cluster: Cluster) -> Any:
    job = cluster.launch(demo, page=1)
    cluster.wait_for(lambda: job.status()["totals"]["items"] > 0, 60, "first items")
    return job


def test_sqlite_locked_for_a_while_loses_nothing(tmp_path: Path) -> None:
    with running_cluster(tmp_path, WORLD, extra_env=sqlite_env(tmp_path)) as cluster:
        job = started_job(cluster)
        hold_write_lock(tmp_path / "items.db", 2.5).join()
        status = job.wait(timeout=240)
        assert status["totals"]["retried"] > 0
        assert_every_item_counted_and_stored_once(status, cluster.stored_keys())


@pytest.mark.slow  # a fault path: a worker killed while its writes wait (~17 s)
def test_worker_killed_while_its_writes_wait_on_storage_loses_nothing(tmp_path: Path) -> None:
    with running_cluster(tmp_path, WORLD, extra_env=sqlite_env(tmp_path)) as cluster:
        job = started_job(cluster)
        lock = hold_write_lock(tmp_path / "items.db", 3.0)
        time.sleep(1.0)  # units are now fetched, parsed and stuck in their write
        cluster.kill_worker(cluster.workers[0])
        assert job.status()["state"] == "running"
        lock.join()
        cluster.start_worker()
        status = job.wait(timeout=240)
        assert_every_item_counted_and_stored_once(status, cluster.stored_keys())
