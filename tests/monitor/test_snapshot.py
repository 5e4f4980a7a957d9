"""The snapshot: jobs as the ledger counts them, workers alive, queue depths, sections."""

from __future__ import annotations

import json

import pytest
import redis

from chains.runtime.job import Job
from monitor.snapshot import SECTIONS, priority_keys, snapshot
from sandbox.cluster import Cluster
from tests.monitor.conftest import run_module


def test_priority_sub_queues_are_the_queue_then_queue_sep_n() -> None:
    assert priority_keys("demo", range(10), ":") == ["demo"] + [f"demo:{n}" for n in range(1, 10)]


def test_sites_throttle_and_pools_are_sections_that_start_empty(
        redis_client: redis.Redis) -> None:
    assert {name: fill(redis_client) for name, fill in SECTIONS.items()} == {
        "sites": {}, "throttle": {}, "pools": {}}


@pytest.mark.integration
def test_once_json_lists_the_finished_job_with_the_ledgers_step_counts(
        cluster: Cluster, finished_job: Job) -> None:
    out = run_module(cluster, "monitor", "--once", "--json", "--inspect-timeout", "1")
    snap = json.loads(out.strip().splitlines()[-1])
    assert set(snap) >= {"jobs", "workers", "queues", "sites", "throttle", "pools"}
    [job] = [j for j in snap["jobs"] if j["job_id"] == finished_job.job_id]
    assert job["state"] == "finished"
    assert job["steps"] == cluster.runtime.ledger.counts(finished_job.job_id)
    assert job["progress"]["fraction"] == 1.0 and job["pending"] == 0


@pytest.mark.integration
def test_snapshot_shows_the_workers_alive_and_their_concurrency(cluster: Cluster) -> None:
    snap = snapshot(cluster.runtime.redis, cluster.app, inspect_timeout=1.0)
    [(name, worker)] = snap["workers"].items()
    assert name.startswith("w0@")
    assert (worker["concurrency"], worker["processes"]) == (2, 2)


@pytest.mark.integration
def test_queue_depth_counts_every_priority_sub_queue(cluster: Cluster) -> None:
    """Messages parked in a queue nobody consumes are counted, whatever their priority."""
    app = cluster.app
    for priority in (0, 3, 9, 9):
        app.send_task("demo.h5.feed", args=[{}, []], queue="parked", priority=priority)
    snap = snapshot(cluster.runtime.redis, app, inspect_timeout=0.1)
    assert snap["queues"]["parked"] == 4
    assert snap["queues"]["demo"] == 0
    cluster.runtime.redis.delete(*priority_keys("parked", range(10), ":"))


def test_sites_show_each_politeness_bucket_with_its_cooldown(redis_client: redis.Redis) -> None:
    from config import Politeness
    from external_interface.politeness.factory import limiter_from_redis
    from monitor.snapshot import politeness

    limiter = limiter_from_redis(redis_client)
    grant = limiter.try_acquire("demo", Politeness(rate_per_s=10))
    grant.release()  # type: ignore[union-attr]
    limiter.penalize("demo", 30)
    sites = politeness(redis_client)
    assert list(sites) == ["demo"]
    assert 25 < sites["demo"]["cooldown_remaining_s"] <= 30


def test_throttle_shows_each_sites_current_rate_and_what_it_met(
        redis_client: redis.Redis) -> None:
    from config import ThrottleSettings
    from external_interface.politeness.factory import throttle_from_settings
    from external_interface.politeness.throttle import Observation
    from monitor.snapshot import throttle

    controller = throttle_from_settings(ThrottleSettings(), redis_client)
    controller.observe("shop", [Observation(0.01, 200)] * 5 + [Observation(0.01, 429, 1.0)])
    rows = throttle(redis_client)
    assert list(rows) == ["shop"]
    shop = rows["shop"]
    assert (shop["phase"], shop["responses"], shop["rate_limited"]) == ("steady", 6, 1)
    assert shop["rate_per_s"] is not None and shop["rate_per_s"] > 0
