"""``control.sh stop`` is graceful: a running unit finishes, up to its task time limit.

A worker started by ``control.sh`` fetches a user page the sandbox answers after 20 s;
``control.sh stop worker`` is called while the fetch is under way. The unit must finish,
be stored once and be fetched once. When a unit runs past the soft time limit instead,
the limit cuts its fetch, the unit goes back to the queue and the worker stops without
being killed; the next worker fetches it, and it is still stored once.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from chains.runtime.model import Chain, Step
from sandbox.cluster import ROOT, Cluster
from sandbox.server import Faults
from sandbox.world import World

pytestmark = [pytest.mark.slow, pytest.mark.integration]

SLOW_USER = "u0003"
ONE_USER = Chain(name="one-user", start="user", steps={"user": Step(task="demo.h5.user_info")})
PATIENT = {  # a 20 s answer is a slow fetch, not a failed one
    "TASK_SOFT_TIME_LIMIT_S": "40",
    "TASK_TIME_LIMIT_S": "45",
    "FETCH_DEADLINE_S": "35",
    "FETCH_READ_TIMEOUT_S": "30",
    "CELERY_VISIBILITY_TIMEOUT": "300",  # no redelivery while the unit runs
    "STOP_MARGIN_S": "10",
}


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Redis and the sandbox (one user answers after 20 s); workers come from control.sh."""
    running = Cluster(tmp_path / "cluster", World(), PATIENT,
                      faults=Faults(slow_users=frozenset({SLOW_USER}), slow_s=20))
    running.start(workers=0)
    try:
        yield running
    finally:
        control(running, "stop", "all")
        running.stop()


def control(cluster: Cluster, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    home = cluster.workdir / "home"
    return subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, text=True,
                          env={**cluster.env, "CRAWLCHAIN_HOME": str(home), **env},
                          capture_output=True, timeout=300, check=False)


def start_worker(cluster: Cluster, **env: str) -> None:
    started = control(cluster, "start", "worker", "--queues", "demo", "--concurrency", "1",
                      **env)
    assert started.returncode == 0, started.stderr


def fetches_of(cluster: Cluster, user: str) -> int:
    assert cluster.sandbox is not None
    return sum(hit.url.startswith(f"/h5/user/{user}") for hit in cluster.sandbox.hits())


def wait_in_flight(cluster: Cluster, user: str, timeout: float = 60) -> None:
    """Until the worker's fetch of ``user`` has reached the sandbox."""
    assert cluster.sandbox is not None
    sandbox = cluster.sandbox
    cluster.wait_for(lambda: any(h.url.startswith(f"/h5/user/{user}")
                                 for h in sandbox.in_flight()), timeout, f"{user} in flight")


def test_stop_lets_a_running_20_s_unit_finish_and_it_is_stored_once(cluster: Cluster) -> None:
    start_worker(cluster)
    job = cluster.launch(ONE_USER, user_id=SLOW_USER)
    wait_in_flight(cluster, SLOW_USER)
    stopped = control(cluster, "stop", "worker")
    assert stopped.returncode == 0, stopped.stderr
    assert "killing" not in stopped.stderr  # it ended by itself, after the unit
    status = job.status()
    assert status["state"] == "finished"
    assert status["steps"]["user"]["done"] == 1 and status["steps"]["user"]["items"] == 1
    assert cluster.stored_keys()["users"] == [SLOW_USER]
    assert fetches_of(cluster, SLOW_USER) == 1


def test_a_unit_cut_at_the_time_limit_is_delivered_again_and_stored_once(
        cluster: Cluster) -> None:
    cut_short = {"TASK_SOFT_TIME_LIMIT_S": "4", "TASK_TIME_LIMIT_S": "6", "STOP_MARGIN_S": "4"}
    start_worker(cluster, **cut_short)
    job = cluster.launch(ONE_USER, user_id=SLOW_USER)
    wait_in_flight(cluster, SLOW_USER)
    stopped = control(cluster, "stop", "worker", **cut_short)
    assert stopped.returncode == 0, stopped.stderr
    assert "killing" not in stopped.stderr  # the soft limit cut the unit: nothing to kill
    log = (cluster.workdir / "home" / "logs" / "worker-default.log").read_text()
    assert "Soft time limit (4s) exceeded for demo.h5.user_info" in log
    assert job.status()["state"] == "running"  # the unit went back to the queue
    assert cluster.sandbox is not None
    cluster.sandbox.site.faults = Faults()  # the site answers at once from now on
    start_worker(cluster)
    finished = job.wait(timeout=120)
    assert finished["state"] == "finished"
    assert finished["steps"]["user"]["done"] == 1 and finished["steps"]["user"]["items"] == 1
    assert cluster.stored_keys()["users"] == [SLOW_USER]
