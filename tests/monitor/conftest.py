"""A crawl cluster shared by the monitor's integration tests, and helpers to run the
monitor's own processes (``python -m monitor``, the exporter) against it."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from chains.demo import demo as declared_demo
from chains.runtime.job import Job
from sandbox.cluster import ROOT, Cluster, running_cluster
from sandbox.world import Shape, World
from tests.chains.recrawl_support import without_recrawl

demo = without_recrawl(declared_demo)  # every launch crawls every unit again
# over a thousand units: seconds on two worker slots, long enough to watch a bar move
WORLD = World(seed=5, shape=Shape(users=80, articles=500, reposts=150))


@pytest.fixture(scope="package")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("monitor"), WORLD, workers=1) as running:
        workers_ready(running)
        yield running


def workers_ready(cluster: Cluster, timeout: float = 30) -> None:
    """Until every worker answers a ping: a job launched now makes progress at once."""
    want = len(cluster.workers)
    wait_until(lambda: len(cluster.app.control.ping(timeout=0.5)) >= want, timeout,
               f"{want} workers answering")


@pytest.fixture(scope="package")
def finished_job(cluster: Cluster) -> Job:
    """One sandbox job run to its end on the real workers."""
    job = cluster.launch(demo, page=1)
    job.wait(timeout=120)
    return job


def run_module(cluster: Cluster, *args: str, timeout: float = 60) -> str:
    """``python -m <args>`` in the cluster's environment; its stdout (raises on failure)."""
    done = subprocess.run([sys.executable, "-m", *args], cwd=ROOT, env=cluster.env,
                          capture_output=True, text=True, timeout=timeout, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def start_module(cluster: Cluster, *args: str) -> subprocess.Popen[str]:
    """A long-running ``python -m <args>``, stdout piped line by line; the caller stops it."""
    return subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, env=cluster.env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True)


def stop(proc: subprocess.Popen[Any]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def wait_until(predicate: Any, timeout: float, what: str, poll_s: float = 0.1) -> Any:
    """Poll until ``predicate()`` is truthy; return its value."""
    deadline = time.monotonic() + timeout
    while not (value := predicate()):
        if time.monotonic() > deadline:
            raise TimeoutError(f"gave up waiting {timeout}s for {what}")
        time.sleep(poll_s)
    return value
