"""The fetch phase: at DEBUG, one line per fetch, the URL's secrets masked; a batch's
units fetched by the unit threads."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from chains.demo import demo as declared_demo
from chains.runtime.checks import resolve
from chains.runtime.context import Runtime, unit_threads
from chains.runtime.pipeline import fetch as fetch_phase
from chains.runtime.pipeline.batch import Batch, UnitRun
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.prepare import prepare
from chains.runtime.registry import step, steps
from chains.runtime.site import Site
from chains.runtime.units import make_unit
from sandbox.server import SandboxServer
from sandbox.server import Site as SandboxSite
from sandbox.world import World
from sites.demo.site import DemoSettings

demo = resolve(declared_demo, steps())

LOGGER = "chains.runtime.pipeline.fetch"
SECRET = "s3cret-in-the-url"


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    running = SandboxServer(SandboxSite(World(seed=3)))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


def fetch_feed(rt: Runtime, base_url: str, pages: list[int]) -> list[UnitRun]:
    """Feed pages of the demo through prepare and fetch, at ``base_url``."""
    rt.ledger.create_job("j", demo.model_dump(mode="json"), {"page": 1})
    units = [make_unit("feed", {"page": page}) for page in pages]
    rt.ledger.register("j", [(u["id"], "feed") for u in units])
    batch = Batch(rt, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings), DemoSettings(base_url=base_url), None,
                  retries=0)
    return list(fetch(batch, prepare(batch, [UnitRun(u, 1, True) for u in units])))


def fetch_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def test_at_debug_each_fetch_is_one_line_with_what_a_site_is_debugged_with(
        runtime: Runtime, server: SandboxServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    base = server.base_url.replace("http://", f"http://crawler:{SECRET}@")
    runs = fetch_feed(runtime, base, [1, 2, 3])
    lines = fetch_lines(caplog)
    assert len(lines) == len(runs) == sum(r.fetch is not None for r in runs) == 3
    by_page = {r.__dict__["url"].split("page=")[1]: r.__dict__ for r in lines}
    assert set(by_page) == {"1", "2", "3"}
    for run in runs:
        assert run.fetch is not None and run.request is not None
        fields = by_page[str(run.request.params["page"])]
        assert {k: fields[k] for k in ("site", "step", "status", "bytes", "proxy", "job_id")
                } == {"site": "demo", "step": "h5.feed", "status": 200,
                      "bytes": run.fetch.nbytes, "proxy": None, "job_id": "j"}
        assert fields["bytes"] > 0 and fields["ms"] >= 0
        assert fields["url"].startswith("http://crawler:***@127.0.0.1:")
    assert all(r.levelno == logging.DEBUG for r in lines)
    assert SECRET not in caplog.text


def test_a_fetch_that_fails_is_a_line_too(runtime: Runtime, server: SandboxServer,
                                          caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    [run] = fetch_feed(runtime, f"{server.base_url}/no-such-prefix", [1])
    [line] = fetch_lines(caplog)
    assert run.fetch is not None and run.error is not None
    assert (line.__dict__["status"], line.__dict__["bytes"]) == (404, 0)
    assert line.getMessage().startswith(f"fetch 404 {server.base_url}/no-such-prefix/h5/feed")


def test_above_debug_no_fetch_is_logged(runtime: Runtime, server: SandboxServer,
                                        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    runs = fetch_feed(runtime, server.base_url, [1, 2])
    assert all(r.fetch is not None for r in runs) and fetch_lines(caplog) == []


def test_a_fetch_is_timed_without_the_slot_release_a_broker_outage_would_stretch(
        runtime: Runtime, server: SandboxServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """The throttle reads this time as the site's latency: a release riding out a Redis
    outage for seconds must not look like the site slowing down."""
    give_back = runtime.limiter._give_back  # type: ignore[attr-defined]
    released = []

    def slow_release(grant: object) -> None:
        time.sleep(0.5)
        released.append(grant)
        give_back(grant)

    monkeypatch.setattr(runtime.limiter, "_give_back", slow_release)
    [run] = fetch_feed(runtime, server.base_url, [1])
    assert released, "the fetch took a slot (slow start caps concurrency)"
    assert run.fetch is not None and run.fetch.seconds < 0.4


# -- the unit threads -------------------------------------------------------------------
def batch_of_units(rt: Runtime, count: int) -> tuple[Batch, list[UnitRun]]:
    batch = Batch(rt, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings), DemoSettings(base_url="http://x"), None,
                  retries=0)
    return batch, [UnitRun(make_unit("feed", {"page": page}), 1, True)
                   for page in range(1, count + 1)]


def quiet(pool: ThreadPoolExecutor) -> None:
    """Return once every task submitted to ``pool`` before has ended: one task per
    thread, queued after them, all running at once."""
    every = threading.Barrier(pool._max_workers + 1)
    for _ in range(pool._max_workers):
        pool.submit(every.wait, 30)
    every.wait(30)


def test_a_batch_left_unfinished_fetches_none_of_the_units_no_thread_took_yet(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """The soft time limit stops a message mid-batch: its units go back to the queue,
    so the threads must not go on fetching them behind its back."""
    taken: list[str] = []
    gate = threading.Event()

    def held(batch: Batch, r: UnitRun) -> UnitRun:  # the first unit answers, the rest hang
        taken.append(r.unit["id"])
        if len(taken) > 1:
            gate.wait()
        return r

    monkeypatch.setattr(fetch_phase, "fetch_one", held)
    batch, runs = batch_of_units(runtime, 200)
    threads = runtime.settings.task.unit_threads
    arriving = fetch(batch, runs)
    first = next(arriving)
    arriving.close()  # as an interrupt leaves it
    gate.set()
    quiet(unit_threads(threads))
    assert first.unit["id"] == taken[0]
    assert len(taken) <= threads + 1 < len(runs)


def test_a_bug_in_a_units_fetch_is_raised_in_the_messages_thread(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    def buggy(batch: Batch, r: UnitRun) -> UnitRun:
        raise KeyError("a bug")

    monkeypatch.setattr(fetch_phase, "fetch_one", buggy)
    batch, runs = batch_of_units(runtime, 3)
    with pytest.raises(KeyError, match="a bug"):
        list(fetch(batch, runs))
