"""The reviver on a real Redis broker: lost units are sent again, held ones are not."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from celery import Celery

from chains.broker.dispatch import CeleryDispatch
from chains.broker.view import broker_view
from chains.demo import demo
from chains.runtime.dispatch import Publisher
from chains.runtime.ledger import Carried, Finish, Ledger
from chains.runtime.reviver import Reviver, sweep_once
from chains.runtime.units import make_unit
from config import Settings
from sandbox.cluster import running_cluster
from sandbox.world import World
from tests.chains.recrawl_support import without_recrawl
from worker import make_app


@pytest.fixture
def app(redis_socket: Path, redis_client: redis.Redis,
        monkeypatch: pytest.MonkeyPatch) -> Iterator[Celery]:
    """An app whose broker is the test's Redis database (nothing consumes from it)."""
    db = redis_client.connection_pool.connection_kwargs["db"]
    monkeypatch.setenv("CELERY_BROKER_URL", f"redis+socket://{redis_socket}?virtual_host={db}")
    monkeypatch.setenv("STATE_REDIS_URL", f"unix://{redis_socket}?db={db}")
    celery_app = make_app(Settings())
    yield celery_app
    celery_app.close()


def lost_job(app: Celery, ledger: Ledger, job_id: str, pages: int) -> list[str]:
    """A job whose feed units were registered but whose messages never reached a queue."""
    ledger.create_job(job_id, demo.model_dump(mode="json"), {"page": 1})
    units = [make_unit("feed", {"page": p}) for p in range(1, pages + 1)]
    Publisher(CeleryDispatch(app), ledger).register(job_id, {"feed": units}, depth=0)
    return [u["id"] for u in units]


def queued_units(app: Celery, job_id: str) -> list[str]:
    with broker_view(app) as view:
        assert view is not None
        return sorted(view.held_units(job_id, ["demo"]) or [])


def test_units_no_queue_holds_are_sent_again_once(app: Celery,
                                                  redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    ids = lost_job(app, ledger, "lost", pages=3)
    reviver = Reviver(CeleryDispatch(app), ledger, stall_s=0)
    with broker_view(app) as view:
        assert view is not None
        assert reviver.sweep(view) == {"lost": 3}
        assert reviver.sweep(view) == {}  # now the queue holds them
    assert queued_units(app, "lost") == sorted(ids)
    assert ledger.counts("lost")["feed"]["revived"] == 3


def test_a_unit_delivered_and_not_yet_acked_is_not_sent_again(app: Celery,
                                                             redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    [unit_id] = lost_job(app, ledger, "held", pages=1)
    Publisher(CeleryDispatch(app), ledger).publish(demo, "held", "feed",
                                   [make_unit("feed", {"page": 1})], depth=0)
    with app.connection_for_read() as conn:
        taken = conn.SimpleQueue("demo", no_ack=False).get(timeout=5)  # delivered, unacked
        assert taken.payload[0][1][0]["id"] == unit_id
        assert redis_client.hlen("unacked") == 1
        with broker_view(app) as view:
            assert view is not None
            assert Reviver(CeleryDispatch(app), ledger, stall_s=0).sweep(view) == {}


def test_units_a_held_message_carries_on_are_not_sent_again(app: Celery,
                                                          redis_client: redis.Redis) -> None:
    """A message running its list on holds its next page unpublished: while the message
    itself is held (delivered, unacked), that page is not lost."""
    ledger = Ledger(redis_client)
    first, carried = lost_job(app, ledger, "carrier", pages=2)
    Publisher(CeleryDispatch(app), ledger).publish(demo, "carrier", "feed",
                                   [make_unit("feed", {"page": 1})], depth=0)
    ledger.finish_many("carrier", [Finish(first, "feed", "done")],
                       carry=Carried(first, [carried]))
    reviver = Reviver(CeleryDispatch(app), ledger, stall_s=0)
    with app.connection_for_read() as conn:
        conn.SimpleQueue("demo", no_ack=False).get(timeout=5)  # delivered, unacked
        with broker_view(app) as view:
            assert view is not None
            assert reviver.sweep(view) == {}
            redis_client.delete("unacked")  # the carrier is gone for good: its page is lost
            assert reviver.sweep(view) == {"carrier": 1}
        assert queued_units(app, "carrier") == [carried]


def test_a_job_at_work_is_left_alone(app: Celery, redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    [unit_id] = lost_job(app, ledger, "busy", pages=1)
    ledger.begin("busy", [unit_id])  # a unit began just now
    with broker_view(app) as view:
        assert view is not None
        assert Reviver(CeleryDispatch(app), ledger, stall_s=60).sweep(view) == {}
    assert queued_units(app, "busy") == []


def test_one_worker_of_the_cluster_sweeps_per_interval(app: Celery,
                                                       redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    lost_job(app, ledger, "twice", pages=2)
    reviver = Reviver(CeleryDispatch(app), ledger, stall_s=0)
    assert sweep_once(reviver, 30, lambda: broker_view(app)) == {"twice": 2}
    redis_client.delete(*redis_client.keys("demo*"))  # lost again
    assert sweep_once(reviver, 30, lambda: broker_view(app)) == {}  # lock held


@pytest.mark.integration
def test_a_job_whose_root_message_was_lost_still_finishes(tmp_path: Path) -> None:
    world = World(seed=3)
    with running_cluster(tmp_path, world) as cluster:
        res = cluster.runtime
        chain = without_recrawl(demo)
        res.ledger.create_job("rootless", chain.model_dump(mode="json"), {"page": 1})
        Publisher(res.dispatch, res.ledger).register(
            "rootless", {"feed": [make_unit("feed", {"page": 1})]}, depth=0)
        started = time.monotonic()
        from chains.runtime.job import Job

        status = Job("rootless", res.ledger).wait(timeout=120)
    assert status["state"] == "finished" and status["totals"]["failed"] == 0
    assert status["steps"]["feed"]["revived"] == 1
    expected = world.expected()
    assert {s: c["done"] for s, c in status["steps"].items()} == {
        s: e["units"] for s, e in expected.items()}
    assert time.monotonic() - started >= 3  # it waited for the job to look stalled
