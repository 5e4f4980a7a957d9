"""The generic crawl of a hostile index page (``sandbox.hostile``) on real workers: every trap
unit ends failed with a clear reason, the good pages are stored, worker memory stays bounded,
and the private address behind the redirects is never reached (the server's own count)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from typing import Any

import psutil
import pytest

from chains.cluster import launch_crawl
from sandbox.cluster import Cluster, running_cluster
from sandbox.hostile.site import GOOD, TRAPS, HostileSite, hostile_server
from sandbox.loop_server import LoopServer
from sandbox.world import World

pytestmark = pytest.mark.integration
MB = 1024 * 1024
MAX_RSS_MB = 300  # per worker process; the bombs decode to 64 MB, the fetch caps at 10 MB
REASONS = {  # a trap's class of failure -> what its recorded reason says
    "timeout": r"deadline|timed out",
    "too large": r"exceeds the cap",
    "redirect loop": r"more than \d+ redirects",
    "too many redirects": r"more than \d+ redirects",
    "private address": r"^UnsafeURL: ",
    "incomplete body": r"broken off|IncompleteRead|incomplete",
    "connection reset": r"reset|broken off",
}


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[LoopServer, HostileSite]]:
    server, site = hostile_server(hold_s=8, bomb_mb=64)
    with server:
        yield server, site


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory,
            hostile: tuple[LoopServer, HostileSite]) -> Iterator[Cluster]:
    _, site = hostile
    env = {"FETCH_SSRF_GUARD": "true", "FETCH_SSRF_ALLOW": json.dumps([site.allow_entry]),
           "TASK_MAX_RETRIES": "1"}
    with running_cluster(tmp_path_factory.mktemp("hostile"), World(seed=3),
                         extra_env=env) as running:
        yield running


class PeakRss:
    """The largest RSS any worker process reaches while it runs (sampled every 50 ms)."""

    def __init__(self, cluster: Cluster) -> None:
        self.roots = [p.pid for p in cluster.workers]
        self.peak = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def loop(self) -> None:
        while not self.done.wait(0.05):
            for pid in self.roots:
                try:
                    root = psutil.Process(pid)
                    for proc in [root, *root.children(recursive=True)]:
                        self.peak = max(self.peak, proc.memory_info().rss)
                except psutil.Error:
                    continue

    def __enter__(self) -> PeakRss:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(timeout=5)


def test_every_trap_fails_with_a_clear_reason_and_nothing_private_is_reached(
        cluster: Cluster, hostile: tuple[LoopServer, HostileSite]) -> None:
    server, site = hostile
    # The private stand-in's spellings are allowed domains, so that the SSRF guard, not the
    # domain check, is what refuses the redirects to it.
    with PeakRss(cluster) as memory:
        job = launch_crawl([server.url + "/"], max_depth=1, runtime=cluster.runtime,
                           allow_domains=["127.0.0.1", "127.0.0.2", "[::ffff:7f00:2]"])
        status = job.wait(timeout=240)
    assert status["state"] == "finished_with_failures"  # the traps fail, each with its reason
    failed: dict[str, str] = {f["params"]["url"].removeprefix(server.url): f["reason"]
                              for f in job.status(failures=100)["failures"]}
    for trap in TRAPS:
        if trap.outcome == "failed":
            assert trap.path in failed, (trap.path, failed)
            assert re.search(REASONS[trap.reason], failed[trap.path]), (trap, failed[trap.path])
        else:
            assert trap.path not in failed
    stored: dict[str, Any] = {r["key"].removeprefix(server.url): r["data"]
                              for r in cluster.runtime.store.read("pages", job_id=job.job_id)}
    assert set(GOOD) | {"/", "/trap/length-short"} <= set(stored)
    assert stored["/trap/length-short"]["title"] == "Short page"  # the forged answer ignored
    assert server.tally.connections[site.private_address] == 0
    assert memory.peak < MAX_RSS_MB * MB, memory.peak / MB
