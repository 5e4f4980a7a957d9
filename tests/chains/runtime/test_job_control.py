"""Operating jobs on real workers through the ``crawlchain`` command (issue 19): outcomes
and exit codes, retrying the failures in the same job, cancel, pause and resume."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from sandbox.cluster import Cluster, running_cluster
from sandbox.server import Faults
from sandbox.world import Shape, World, expected_keys

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
WORLD = World(seed=3)


def crawlchain(cluster: Cluster, *args: str,
               timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """``python -m cli ARGS`` as a user on the cluster's host runs it."""
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, env=cluster.env,
                          text=True, capture_output=True, timeout=timeout, check=False)


def summary(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert "Traceback" not in done.stderr, done.stderr
    assert done.stdout.strip(), done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def launch(cluster: Cluster, *args: str) -> subprocess.CompletedProcess[str]:
    assert cluster.sandbox is not None
    return crawlchain(cluster, "launch", "demo", "--set", f"base_url={cluster.sandbox.base_url}",
                      *args)


def requests(cluster: Cluster) -> int:
    """Requests the sandbox has seen so far, answered or not."""
    assert cluster.sandbox is not None
    return sum(cluster.sandbox.fetch_counts().values())


def job_id_of(done: subprocess.CompletedProcess[str]) -> str:
    line = next(x for x in (done.stdout + done.stderr).splitlines()
                if x.startswith("launched job"))
    return line.split()[2]


def test_failures_exit_3_and_a_retry_after_the_fix_ends_the_same_job_finished(
        tmp_path: Path) -> None:
    authors = sorted({a.author_id for a in WORLD.articles.values()})
    victims = frozenset(authors[:2])
    faults = Faults(missing_statuses=victims)
    with running_cluster(tmp_path, WORLD, faults=faults) as cluster:
        failed = launch(cluster, "--json")
        first = summary(failed)
        assert cluster.sandbox is not None
        cluster.sandbox.site.faults = replace(faults, missing_statuses=frozenset())  # fixed
        retried = crawlchain(cluster, "retry", first["job_id"], "--step", "user_statuses",
                             "--json")
        after = summary(retried)
        keys = cluster.stored_keys()
        again = launch(cluster, "--json")
    assert failed.returncode == 3, failed.stderr
    assert first["state"] == "finished_with_failures"
    [group] = first["failure_groups"]
    assert (group["step"], group["error"], group["count"]) == ("user_statuses", "NotFound", 2)
    assert all("/statuses" in url for url in group["urls"])
    assert retried.returncode == 0, retried.stderr
    assert "2 failed units sent again" in retried.stderr
    assert after["job_id"] == first["job_id"] and after["state"] == "finished"
    want = WORLD.expected()
    for step, counts in after["steps"].items():
        assert (counts["done"], counts["failed"], counts["spawned"]) == (
            want[step]["units"], 0, want[step]["units"]), step
        assert counts["items"] == want[step]["items"], step
    assert {c: set(k) for c, k in keys.items()} == expected_keys(WORLD)  # children now stored
    assert again.returncode == 0 and summary(again)["state"] == "finished", again.stderr


def test_a_cancelled_job_exits_4_with_its_open_units_recorded_as_cancelled(
        tmp_path: Path) -> None:
    world = World(seed=4, shape=Shape(users=100, articles=800))
    with running_cluster(tmp_path, world, faults=Faults(latency_s=0.05)) as cluster:
        launched = launch(cluster, "--detach")
        job_id = job_id_of(launched)
        ledger = cluster.runtime.ledger
        cluster.wait_for(lambda: sum(c["done"] for c in ledger.counts(job_id).values()) > 20,
                         60, "20 units done")
        cancelled = crawlchain(cluster, "cancel", job_id)
        waited = crawlchain(cluster, "wait", job_id, "--json")
        late = crawlchain(cluster, "pause", job_id)
    assert launched.returncode == 0, launched.stderr
    assert cancelled.returncode == 0 and "cancelled" in cancelled.stdout, cancelled.stderr
    status = summary(waited)
    assert waited.returncode == 4 and status["state"] == "cancelled"
    totals = status["totals"]
    assert totals["cancelled"] > 0 and status["pending"] == 0
    assert totals["done"] + totals["failed"] + totals["skipped"] + totals["cancelled"] == \
        totals["spawned"]
    assert late.returncode != 0 and "only a running job can be paused" in late.stderr


@pytest.mark.slow
def test_a_paused_job_sends_no_request_for_10_s_and_resumes_exactly(tmp_path: Path) -> None:
    world = World(seed=4, shape=Shape(users=100, articles=800))
    want = world.expected()
    assert sum(w["units"] for w in want.values()) >= 2000
    with running_cluster(tmp_path, world, workers=2, faults=Faults(latency_s=0.01)) as cluster:
        job_id = job_id_of(launch(cluster, "--detach"))
        ledger, sandbox = cluster.runtime.ledger, cluster.sandbox
        assert sandbox is not None
        cluster.wait_for(lambda: sum(c["done"] for c in ledger.counts(job_id).values()) > 300,
                         120, "300 units done")
        paused = crawlchain(cluster, "pause", job_id)
        time.sleep(2)  # units already fetching finish
        seen = requests(cluster)
        time.sleep(10)
        quiet = requests(cluster) - seen
        state = ledger.state(job_id)
        resumed = crawlchain(cluster, "resume", job_id, "--json", timeout=600)
        keys = cluster.stored_keys()
        duplicates = sandbox.duplicates()
    assert paused.returncode == 0, paused.stderr
    assert (state, quiet) == ("paused", 0)
    status = summary(resumed)
    assert resumed.returncode == 0 and status["state"] == "finished", resumed.stderr
    for step, counts in status["steps"].items():
        assert (counts["done"], counts["failed"]) == (want[step]["units"], 0), step
        assert counts["items"] == want[step]["items"], step
    assert {c: set(k) for c, k in keys.items()} == expected_keys(world)
    assert duplicates == {}
