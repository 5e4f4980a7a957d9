"""The phases on one unit, with no broker and no worker: a real Redis, a real sandbox
server, SQLite, and a ``Recorder`` where messages would go. Each hook's signals take
effect here, as a site would see them."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from chains.demo import demo
from chains.runtime.context import Runtime
from chains.runtime.dispatch import Held, Recorder
from chains.runtime.ledger import Carry
from chains.runtime.pipeline.close import close
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.parse import parse
from chains.runtime.pipeline.prepare import (
    Batch,
    Done,
    Failed,
    RetryAfter,
    Skipped,
    UnitRun,
    prepare,
)
from chains.runtime.pipeline.save import save
from chains.runtime.pipeline.spawn import spawn
from chains.runtime.registry import step
from chains.runtime.site import Hooks, Signal, Site, UnitContext
from chains.runtime.units import make_unit
from external_interface.http import Request, Response
from external_interface.storage import Item
from sandbox.server import SandboxServer
from sandbox.server import Site as SandboxSite
from sandbox.world import World
from sites.demo.site import DemoSettings

WORLD = World(seed=3)


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    running = SandboxServer(SandboxSite(WORLD))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


@dataclass
class Ran:
    runs: list[UnitRun]
    sent: Recorder
    stored: int
    requests: int


def run_feed_page(rt: Runtime, server: SandboxServer, hooks: Hooks) -> Ran:
    """Page 1 of the demo feed through every phase up to the close."""
    rt.ledger.create_job("j", demo.model_dump(mode="json"), {"page": 1})
    unit = make_unit("feed", {"page": 1})
    rt.ledger.register("j", [(unit["id"], "feed")])
    before = sum(server.fetch_counts("/h5/").values())  # in flight too: may be read first
    batch = Batch(rt, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings, hooks=hooks),
                  DemoSettings(base_url=server.base_url), None, retries=0)
    runs = prepare(batch, [UnitRun(unit, 1, True)])
    runs = spawn(batch, save(batch, parse(batch, fetch(batch, runs))), Held(), False)
    assert isinstance(rt.dispatch, Recorder)
    return Ran(runs, rt.dispatch, rt.store.count("feed_entries"),
               sum(server.fetch_counts("/h5/").values()) - before)  # robots.txt aside


def test_a_unit_run_again_resends_its_children_only_if_an_earlier_start_died(
        runtime: Runtime, server: SandboxServer) -> None:
    first = run_feed_page(runtime, server, Hooks())
    sent_first = len(first.sent.sent)
    assert sent_first >= 3
    batch = Batch(runtime, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings), DemoSettings(base_url=server.base_url),
                  None, retries=1)
    unit = make_unit("feed", {"page": 1})
    for starts, resent in ((1, False), (2, True)):  # waited or retried; its worker died
        before = len(first.sent.sent)
        runs = prepare(batch, [UnitRun(unit, starts, False)])
        spawn(batch, save(batch, parse(batch, fetch(batch, runs))), Held(), False)
        assert (len(first.sent.sent) > before) is resent, starts


class Saying(Hooks):
    """Answers ``signal`` from one hook, ``CONTINUE`` from the others."""

    def __init__(self, hook: str, signal: Signal) -> None:
        self.hook, self.signal = hook, signal

    def _say(self, hook: str) -> Signal:
        return self.signal if hook == self.hook else Signal.CONTINUE

    def before_request(self, unit: UnitContext, request: Request) -> Signal:
        return self._say("before_request")

    def after_request(self, unit: UnitContext, response: Response) -> Signal:
        return self._say("after_request")

    def before_save(self, unit: UnitContext, items: list[Item]) -> Signal:
        return self._say("before_save")

    def after_save(self, unit: UnitContext, items: list[Item]) -> Signal:
        return self._say("after_save")


def test_a_unit_runs_every_phase_without_a_broker(runtime: Runtime,
                                                  server: SandboxServer) -> None:
    ran = run_feed_page(runtime, server, Hooks())
    [run] = ran.runs
    assert run.fate == Done(items=WORLD.shape.feed_page_size, change="new")  # first seen
    assert (ran.requests, ran.stored) == (1, WORLD.shape.feed_page_size)
    sent = {m.task: len(m.units) for m in ran.sent.sent}
    assert sent["demo.h5.feed"] == 1  # its next page
    assert sent["demo.h5.user_info"] >= 1 and sent["demo.h5.user_statuses"] >= 1


def test_close_finishes_the_unit_in_the_ledger(runtime: Runtime, server: SandboxServer) -> None:
    ran = run_feed_page(runtime, server, Hooks())
    batch_step = step("demo.h5.feed")
    batch = Batch(runtime, {"job": "j", "step": "feed", "depth": 0}, demo, batch_step,
                  Site("demo", settings=DemoSettings), DemoSettings(), None, retries=0)
    closed = close(batch, ran.runs, Carry("c", []))
    assert closed.counts["done"] == 1 and closed.retry is None
    assert runtime.ledger.counts("j")["feed"]["done"] == 1


@pytest.mark.parametrize(("hook", "signal", "fate", "requests", "stored", "spawned"), [
    ("before_request", Signal.SKIP, Skipped("before_request"), 0, 0, False),
    ("before_request", Signal.RETRY, RetryAfter(None, "before_request asked to retry"), 0, 0,
     False),
    ("before_request", Signal.ABORT, Failed("PermanentError", "before_request aborted the unit"),
     0, 0, False),
    ("after_request", Signal.SKIP, Skipped("after_request"), 1, 0, False),
    ("after_request", Signal.RETRY, RetryAfter(None, "after_request asked to retry"), 1, 0,
     False),
    ("before_save", Signal.SKIP, Skipped("before_save"), 1, 0, False),
    ("before_save", Signal.ABORT, Failed("PermanentError", "before_save aborted the unit"), 1,
     0, False),
    ("after_save", Signal.SKIP, Done(items=10, change="new"), 1, 10, True),  # saved: goes on
    ("after_save", Signal.RETRY, RetryAfter(None, "after_save asked to retry"), 1, 10, False),
    ("after_save", Signal.ABORT, Failed("PermanentError", "after_save aborted the unit"), 1, 10,
     False),
])
def test_each_hooks_signal_takes_effect(runtime: Runtime, server: SandboxServer, hook: str,
                                        signal: Signal, fate: object, requests: int,
                                        stored: int, spawned: bool) -> None:
    ran = run_feed_page(runtime, server, Saying(hook, signal))
    [run] = ran.runs
    assert run.fate == fate
    assert (ran.requests, ran.stored) == (requests, stored)
    assert bool(ran.sent.sent) is spawned
