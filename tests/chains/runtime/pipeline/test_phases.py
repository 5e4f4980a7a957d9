"""The phases on one unit, with no broker and no worker: a real Redis, a real sandbox
server, SQLite, and a ``Recorder`` where messages would go. What a middleware or an item
pipeline does takes effect here, as a site would see it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, replace

import pytest

from chains.demo import demo as declared_demo
from chains.runtime.checks import resolve
from chains.runtime.context import Runtime
from chains.runtime.dispatch import Outbox, Recorder
from chains.runtime.extensions import DropItem, ItemPipeline, Middleware, UnitContext
from chains.runtime.ledger import Carried
from chains.runtime.pipeline.batch import Batch, Done, Failed, RetryAfter, Skipped, UnitRun
from chains.runtime.pipeline.close import close
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.parse import parse
from chains.runtime.pipeline.prepare import prepare
from chains.runtime.pipeline.save import save
from chains.runtime.pipeline.spawn import spawn
from chains.runtime.registry import step, steps
from chains.runtime.site import Site
from chains.runtime.units import make_unit
from exceptions import NetworkError, PermanentError, SkipUnit, TryAgain
from external_interface.http import Request, Response
from external_interface.storage import Item
from sandbox.server import SandboxServer
from sandbox.server import Site as SandboxSite
from sandbox.world import World
from sites.demo.h5 import FeedEntry
from sites.demo.site import DemoSettings

demo = resolve(declared_demo, steps())

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


def run_feed_page(rt: Runtime, server: SandboxServer, middlewares: tuple[Middleware, ...] = (),
                  pipelines: tuple[ItemPipeline, ...] = ()) -> Ran:
    """Page 1 of the demo feed through every phase up to the close."""
    rt.ledger.create_job("j", demo.model_dump(mode="json"), {"page": 1})
    unit = make_unit("feed", {"page": 1})
    rt.ledger.register("j", [(unit["id"], "feed")])
    before = sum(server.fetch_counts("/h5/").values())  # in flight too: may be read first
    batch = Batch(rt, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings, pipelines=pipelines,
                       middlewares=middlewares), DemoSettings(base_url=server.base_url),
                  None, retries=0)
    runs = prepare(batch, [UnitRun(unit, 1, True)])
    runs = spawn(batch, save(batch, parse(batch, fetch(batch, runs))), Outbox(), False)
    assert isinstance(rt.dispatch, Recorder)
    return Ran(runs, rt.dispatch, rt.store.count("feed_entries"),
               sum(server.fetch_counts("/h5/").values()) - before)  # robots.txt aside


def test_a_unit_run_again_resends_its_children_only_if_an_earlier_start_died(
        runtime: Runtime, server: SandboxServer) -> None:
    first = run_feed_page(runtime, server)
    sent_first = len(first.sent.sent)
    assert sent_first >= 3
    batch = Batch(runtime, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings), DemoSettings(base_url=server.base_url),
                  None, retries=1)
    unit = make_unit("feed", {"page": 1})
    for starts, resent in ((1, False), (2, True)):  # waited or retried; its worker died
        before = len(first.sent.sent)
        runs = prepare(batch, [UnitRun(unit, starts, False)])
        spawn(batch, save(batch, parse(batch, fetch(batch, runs))), Outbox(), False)
        assert (len(first.sent.sent) > before) is resent, starts


def test_a_unit_runs_every_phase_without_a_broker(runtime: Runtime,
                                                  server: SandboxServer) -> None:
    ran = run_feed_page(runtime, server)
    [run] = ran.runs
    assert run.fate == Done(items=WORLD.shape.feed_page_size, change="new")  # first seen
    assert (ran.requests, ran.stored) == (1, WORLD.shape.feed_page_size)
    sent = {m.task: len(m.units) for m in ran.sent.sent}
    assert sent["demo.h5.feed"] == 1  # its next page
    assert sent["demo.h5.user_info"] >= 1 and sent["demo.h5.user_statuses"] >= 1


def test_close_finishes_the_unit_in_the_ledger(runtime: Runtime, server: SandboxServer) -> None:
    ran = run_feed_page(runtime, server)
    batch_step = step("demo.h5.feed")
    batch = Batch(runtime, {"job": "j", "step": "feed", "depth": 0}, demo, batch_step,
                  Site("demo", settings=DemoSettings), DemoSettings(), None, retries=0)
    closed = close(batch, ran.runs, Carried("c", []))
    assert closed.counts["done"] == 1 and closed.retry is None
    assert runtime.ledger.counts("j")["feed"]["done"] == 1


class Middlewares(Middleware):
    """Raises ``error`` from one hook, or changes what passes through it."""

    def __init__(self, hook: str, error: Exception | None = None) -> None:
        self.hook, self.error = hook, error

    def process_request(self, request: Request, unit: UnitContext) -> Request:
        if self.hook == "request" and self.error is not None:
            raise self.error
        return request.replace(headers={**request.headers, "X-Seen-By": "middleware"})

    def process_response(self, response: Response, unit: UnitContext) -> Response:
        if self.hook == "response" and self.error is not None:
            raise self.error
        data = json.loads(response.body)
        data["articles"] = data["articles"][:3]  # the step parses what the middleware left
        return replace(response, body=json.dumps(data).encode())


@pytest.mark.parametrize(("hook", "error", "fate", "requests"), [
    ("request", SkipUnit("archived"), Skipped("archived"), 0),
    ("request", NetworkError("vpn down"), RetryAfter(None, "NetworkError: vpn down"), 0),
    ("request", PermanentError("not ours"), Failed("PermanentError", "not ours"), 0),
    ("request", KeyError("x"), Failed("ParseError",
                                      "Middlewares.process_request raised KeyError: 'x'"), 0),
    ("response", SkipUnit("soft 404"), Skipped("soft 404"), 1),
    ("response", TryAgain("soft block"), RetryAfter(None, "TryAgain: soft block"), 1),
])
def test_a_middleware_ends_a_unit_by_raising(runtime: Runtime, server: SandboxServer,
                                              hook: str, error: Exception, fate: object,
                                              requests: int) -> None:
    ran = run_feed_page(runtime, server, middlewares=(Middlewares(hook, error),))
    [run] = ran.runs
    assert run.fate == fate
    assert (ran.requests, ran.stored, bool(ran.sent.sent)) == (requests, 0, False)


def test_middlewares_change_the_request_and_the_response_the_step_sees(
        runtime: Runtime, server: SandboxServer) -> None:
    ran = run_feed_page(runtime, server, middlewares=(Middlewares("none"),))
    [run] = ran.runs
    assert run.request is not None and run.request.headers["X-Seen-By"] == "middleware"
    assert run.fate == Done(items=3, change="new") and ran.stored == 3


class Drops(ItemPipeline):
    def process_item(self, item: Item, unit: UnitContext) -> Item:
        if isinstance(item, FeedEntry) and item.id.endswith(("1", "3")):
            raise DropItem("odd author")
        return item


class Enriches(ItemPipeline):
    def process_item(self, item: Item, unit: UnitContext) -> Item:
        assert isinstance(item, FeedEntry)
        return TitledEntry(**item.model_dump(), title_words=len(item.title.split()))


class TitledEntry(FeedEntry, collection="feed_entries", key="id"):
    title_words: int


def test_pipelines_drop_items_with_a_reason_and_enrich_the_rest(
        runtime: Runtime, server: SandboxServer) -> None:
    ran = run_feed_page(runtime, server, pipelines=(Drops(), Enriches()))
    [run] = ran.runs
    dropped = len(run.dropped)
    assert dropped and set(run.dropped) == {"odd author"}
    assert ran.stored == WORLD.shape.feed_page_size - dropped
    stored = [r["data"] for r in runtime.store.read("feed_entries")]
    assert all(r["title_words"] == len(r["title"].split()) for r in stored)
    assert bool(ran.sent.sent)  # links fan out from what the parse returned


def test_a_pipeline_bug_fails_the_unit_naming_the_pipeline(runtime: Runtime,
                                                           server: SandboxServer) -> None:
    class Broken(ItemPipeline):
        def process_item(self, item: Item, unit: UnitContext) -> Item:
            raise ValueError("bad enrichment")

    ran = run_feed_page(runtime, server, pipelines=(Broken(),))
    [run] = ran.runs
    assert isinstance(run.fate, Failed) and run.fate.error == "ParseError"
    assert "Broken.process_item raised ValueError" in run.fate.message and ran.stored == 0


@pytest.mark.parametrize(("raised", "reason"), [
    ([], "poison unit: its worker died 5 times while running it"),
    (["ValueError: boom"] * 5, "poison unit: raised ValueError: boom 5 times"),
    (["ValueError: boom"] * 3, "poison unit: raised ValueError: boom 3 times; "
                               "its worker died 2 times while running it"),
])
def test_a_poison_unit_is_failed_with_what_happened_to_it(
        runtime: Runtime, server: SandboxServer, raised: list[str], reason: str) -> None:
    """Its worker died only for the starts whose message recorded no raise."""
    runtime.ledger.create_job("j", demo.model_dump(mode="json"), {"page": 1})
    unit = make_unit("feed", {"page": 1})
    runtime.ledger.register("j", [(unit["id"], "feed")])
    for text in raised:
        runtime.ledger.record_raise("j", [unit["id"]], text)
    batch = Batch(runtime, {"job": "j", "step": "feed", "depth": 0}, demo, step("demo.h5.feed"),
                  Site("demo", settings=DemoSettings), DemoSettings(base_url=server.base_url),
                  None, retries=0)
    [run] = prepare(batch, [UnitRun(unit, 6, False)])  # the limit is 5
    assert run.fate == Failed("PermanentError", reason)
