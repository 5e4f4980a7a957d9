"""The job API over a real cluster: jobs launched, paused, resumed, retried and cancelled
over HTTP, run by real Celery workers against the sandbox's forum."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chains.forum import forum
from chains.runtime.launch import launch
from external_interface import keys
from sandbox.forum.expected import expected
from tests.api.cluster_support import ApiCluster, api_cluster
from tests.api.conftest import api_for, serving

pytestmark = [pytest.mark.slow, pytest.mark.integration]

TERMINAL = {"finished", "finished_with_failures", "cancelled"}


@pytest.fixture
def running(tmp_path: Path) -> Iterator[ApiCluster]:
    with api_cluster(tmp_path, workers=1) as cluster:
        yield cluster


def ended(summary: dict[str, Any]) -> bool:
    return summary["state"] in TERMINAL


def test_a_job_is_paused_resumed_then_its_failed_units_retried_after_the_site_is_fixed(
        running: ApiCluster) -> None:
    api = running.api()
    job_id = running.launch_forum()
    base = f"{running.url}/api/jobs/{job_id}"
    assert api.post(base + "/pause").json()["state"] == "paused"
    assert running.summary(job_id)["state"] == "paused"
    assert api.post(base + "/resume").json()["state"] == "running"
    first = running.wait(job_id, ended, 180, "the forum job to end")
    assert first["state"] == "finished_with_failures"
    groups = first["failure_groups"]
    assert [(g["step"], g["error"], g["count"]) for g in groups] == [("user", "NotFound", 3)]
    assert all(url.startswith(running.forum_url + "/api/users/") for url in groups[0]["urls"])
    running.forum.fix()
    retried = api.post(base + "/retry", json={"step": "user", "error": "NotFound"}).json()
    assert retried["units"] == 3
    last = running.wait(job_id, ended, 120, "the retried units")
    assert last["state"] == "finished" and last["totals"]["failed"] == 0
    want = expected(running.forum.world)
    assert last["steps"]["user"]["done"] == len(want.records["users"])


def profiles(count: int) -> list[dict[str, Any]]:
    """Params of ``count`` user units beside the forum's start (profiles it lacks: 404s)."""
    return [{"author_id": 1_000_000 + n} for n in range(count)]


def test_cancel_of_a_job_of_10000_queued_units_returns_once_none_can_run_and_the_record_survives_restarts(  # noqa: E501
        tmp_path: Path) -> None:
    """10,000 units queued before any worker runs; cancel while a worker takes them. After
    cancel returns, no unit of the job begins (the ledger's first starts do not grow), the
    queue drains to nothing, and the job's record and counts read the same after the API,
    the broker (the same Redis as the state plane) and the workers are restarted."""
    with api_cluster(tmp_path, workers=0) as running:
        cluster = running.cluster
        settings = {"forum": {"base_url": running.forum_url}}
        job = launch(forum, {}, runtime=cluster.runtime, settings=settings,
                     roots={"user": profiles(10_000)})
        started = keys.job(job.job_id, "first_start")
        assert running.summary(job.job_id)["steps"]["user"]["spawned"] == 10_000
        cluster.start_worker()
        running.wait(job.job_id, lambda s: s["totals"]["failed"] > 0, 60, "a worker to begin")
        cancelled = running.api().post(f"{running.url}/api/jobs/{job.job_id}/cancel").json()
        begun = cluster.runtime.redis.hlen(started)
        assert cancelled["state"] == "cancelled" and cancelled["units"] > 0
        cluster.wait_for(lambda: queued(running) == 0, 60, "the queue to drain")
        assert cluster.runtime.redis.hlen(started) == begun
        before = running.summary(job.job_id)
        steps = before["steps"]
        outcomes = sum(s[k] for s in steps.values()
                       for k in ("done", "failed", "skipped", "gone", "cancelled"))
        assert outcomes == sum(s["spawned"] for s in steps.values()), steps
        assert steps["user"]["spawned"] >= 10_000 and steps["user"]["cancelled"] > 0
        assert before["pending"] == 0 and before["state"] == "cancelled"
        restart_all(running)
        runtime = cluster.build_runtime()
        try:
            with serving(api_for(runtime)) as url:
                running.url = url
                after = running.summary(job.job_id)
        finally:
            runtime.close()
        for field in ("state", "steps", "totals", "pending", "created_at", "finished_at"):
            assert after[field] == before[field], field


def queued(running: ApiCluster) -> int:
    """Messages in the forum queue and delivered-but-unacked, from the workers view."""
    view = running.api().get(running.url + "/api/workers").json()
    unacked = running.cluster.runtime.redis.hlen("unacked")
    return int(view["queues"].get("forum", {}).get("ready", 0)) + int(unacked)


def restart_all(running: ApiCluster) -> None:
    """Workers stopped, Redis stopped and started again on its files, a worker again."""
    cluster = running.cluster
    for proc in cluster.workers:
        cluster.kill_worker(proc, signal.SIGTERM)
    cluster.workers.clear()
    cluster.kill_redis(signal.SIGTERM)
    cluster.start_redis()
    cluster.start_worker()
    time.sleep(0.5)  # not a bound: the worker's first poll, so the restart is a real one
