"""The task adapter on real workers: poison units, fetch caps, lists run inline."""

from __future__ import annotations

import json
import re
import signal
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import psutil
import pytest

from chains.demo import demo
from chains.runtime.model import Chain, Step
from chains.runtime.units import unit_id
from external_interface import keys
from sandbox.cluster import running_cluster
from sandbox.server import Faults
from sandbox.world import World


@pytest.mark.slow
@pytest.mark.integration
def test_a_unit_whose_child_dies_every_time_ends_as_poison_and_the_job_finishes(
        tmp_path: Path) -> None:
    world = World(seed=3)
    victim = sorted({a.author_id for a in world.articles.values()})[0]
    faults = Faults(slow_users=frozenset({victim}), slow_s=30.0)
    with running_cluster(tmp_path, world, concurrency=1, faults=faults) as cluster:
        job = cluster.launch(demo, page=1)
        victim_unit = unit_id("user_info", {"user_id": victim})
        deliveries = keys.job(job.job_id, "deliveries")
        kills, deadline = 0, time.monotonic() + 180
        while job.status()["state"] == "running" and time.monotonic() < deadline:
            starts = int(cluster.runtime.redis.hget(deliveries, victim_unit) or 0)
            if starts > kills:  # the victim is being fetched: kill the child holding it
                time.sleep(0.3)
                for child in psutil.Process(cluster.workers[0].pid).children():
                    child.send_signal(signal.SIGKILL)
                kills += 1
            time.sleep(0.1)
        status = job.wait(timeout=10)
    [failure] = status["failures"]
    assert failure["params"] == {"user_id": victim}
    assert failure["reason"].startswith("PermanentError: poison unit: its worker died")
    assert "raised" not in failure["reason"]
    expected = world.expected()
    for step, want in expected.items():
        failed = 1 if step == "user_info" else 0
        assert status["steps"][step]["done"] == want["units"] - failed, step


class LoopingSink(BaseHTTPRequestHandler):
    """An HTTP item sink that stores every batch but those holding one user: those it
    redirects to itself, so requests raises ``TooManyRedirects`` (no crawl error) in the
    worker, whose process lives on."""

    victim = ""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.answer(any(i["collection"] == "users" and i["key"] == self.victim
                        for i in body["items"]))

    def do_GET(self) -> None:  # a 302 turns the POST into a GET: still looping
        self.answer(True)

    def answer(self, looping: bool) -> None:
        self.send_response(302 if looping else 200)
        self.send_header("Location" if looping else "Content-Type",
                         self.path if looping else "application/json")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


@pytest.mark.slow
@pytest.mark.integration
def test_a_unit_whose_message_raises_every_time_ends_as_poison_naming_what_it_raised(
        tmp_path: Path) -> None:
    """Its worker never died: the reason is what the message raised, and how often."""
    world = World(seed=3)
    victim = sorted({a.author_id for a in world.articles.values()})[0]
    LoopingSink.victim = str(victim)
    sink = ThreadingHTTPServer(("127.0.0.1", 0), LoopingSink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    env = {"STORAGE_URL": f"http://127.0.0.1:{sink.server_address[1]}/items"}
    try:
        with running_cluster(tmp_path, world, concurrency=1, extra_env=env) as cluster:
            cluster.wait_for_workers()
            pids = {cluster.workers[0].pid, *cluster.pool_children(cluster.workers[0])}
            status = cluster.launch(demo, page=1).wait(timeout=180)
            alive = {cluster.workers[0].pid, *cluster.pool_children(cluster.workers[0])}
    finally:
        sink.shutdown()
    [failure] = status["failures"]
    assert failure["params"] == {"user_id": victim}
    assert re.fullmatch(r"PermanentError: poison unit: raised TooManyRedirects: "
                        r"Exceeded \d+ redirects\. [5-9] times", failure["reason"])
    assert alive == pids  # no process of the worker died
    assert status["steps"]["user_info"]["done"] == world.expected()["user_info"]["units"] - 1


def most_in_flight(hits: list[Any]) -> int:
    """The most requests the server was answering at once."""
    edges = sorted([(h.arrived, 1) for h in hits] + [(h.answered, -1) for h in hits])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


@pytest.mark.integration
def test_a_worker_process_keeps_at_most_its_fetch_cap_in_flight(tmp_path: Path) -> None:
    world = World(seed=3)
    env = {"TASK_MAX_FETCHES": "2", "TASK_UNIT_THREADS": "8"}
    with running_cluster(tmp_path, world, concurrency=1, extra_env=env,
                         faults=Faults(latency_s=0.05)) as cluster:
        status = cluster.launch(demo, page=1).wait(timeout=240)
        assert cluster.sandbox is not None
        hits = cluster.sandbox.hits()
    assert status["state"] == "finished" and status["totals"]["failed"] == 0
    assert most_in_flight(hits) == 2  # batches of several units, never more than the cap


@pytest.mark.integration
@pytest.mark.slow  # a fault path: a worker killed mid-list (~18 s)
def test_a_list_run_on_in_one_message_goes_on_from_its_page_after_the_worker_dies(
        tmp_path: Path) -> None:
    """The feed runs on in its message (``inline_next``); SIGKILL mid-list: the message
    comes back once the broker's visibility timeout passes and goes on from the page it
    held. The reviver sends nothing: the page was held by that unacked message."""
    world = World(seed=3)
    feed_run = Chain(name="feed-run", start="feed",
                     steps={"feed": Step(task="demo.h5.feed", inline_next=100)})
    with running_cluster(tmp_path, world, faults=Faults(latency_s=0.3)) as cluster:
        job = cluster.launch(feed_run, page=1)
        cluster.wait_for(lambda: job.status()["steps"].get("feed", {}).get("done", 0) >= 2,
                         60, "two feed pages done")
        cluster.kill_worker(cluster.workers[0])
        cluster.start_worker()
        status = job.wait(timeout=90)
        stored = cluster.stored_keys()["feed_entries"]
    feed = status["steps"]["feed"]
    assert (status["state"], feed["done"], feed["failed"]) == ("finished", world.feed_pages(), 0)
    assert (feed["items"], feed["revived"]) == (len(world.articles), 0)
    assert sorted(stored) == sorted(world.articles)
