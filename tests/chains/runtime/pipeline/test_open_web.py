"""The open web's defaults in the phases, with no broker and no worker: a real Redis, real
loopback servers, SQLite, a ``Recorder`` where messages would go.

robots.txt obeyed (a Disallow, a 404, a 500, a 5 MB file, a site's opt-out), Crawl-delay
capping a host's rate, a browser's headers on every request (and a site's own in one
line), a 429 cooling the bucket down through the throttle, the development cache, and a
job's cap on a step's units."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from chains.crawl import crawl as declared_crawl
from chains.polite import polite as declared_polite
from chains.runtime import registry
from chains.runtime.checks import resolve
from chains.runtime.context import Runtime
from chains.runtime.dispatch import Outbox, Recorder
from chains.runtime.model import Chain
from chains.runtime.pipeline import polite as politeness
from chains.runtime.pipeline.batch import Batch, Done, RetryAfter, Skipped, UnitRun
from chains.runtime.pipeline.close import close
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.parse import parse
from chains.runtime.pipeline.prepare import prepare
from chains.runtime.pipeline.save import save
from chains.runtime.pipeline.spawn import spawn
from chains.runtime.registry import steps
from chains.runtime.site import Site
from chains.runtime.site_settings import SiteSettings
from chains.runtime.units import make_unit
from config import Politeness, Settings, SiteHeaders
from external_interface.politeness.throttle import Observation
from external_interface.robots import MAX_BYTES
from sandbox.loop_server import LoopServer, bind
from sandbox.polite.catalogue import Catalogue, Shape
from sandbox.polite.defences import PoliteDefences
from sandbox.polite.site import PoliteSite
from sites.crawl import CrawlSettings
from tests.external_interface.robots.site import Route, serve

crawl = resolve(declared_crawl, steps())
polite = resolve(declared_polite, steps())

HTML = {"Content-Type": "text/html; charset=utf-8"}
PAGE = Route(body=b"<html><head><title>A page</title></head><body>hi</body></html>",
             headers=HTML)


@pytest.fixture
def runtime_env(runtime_env: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    """Also the development cache, in the test's directory."""
    runtime_env.setenv("HTTP_CACHE_DIR", str(tmp_path / "http-cache"))
    return runtime_env


def throttle_off(monkeypatch: pytest.MonkeyPatch, runtime: Runtime) -> Runtime:
    monkeypatch.setenv("THROTTLE_ENABLED", "false")
    return replace(runtime, throttle=None, settings=Settings())


def crawl_batch(rt: Runtime, site: Site | None = None, chain: Chain = crawl,
                settings: CrawlSettings | None = None) -> Batch:
    return Batch(rt, {"job": "j", "step": "page", "depth": 0}, chain,
                 registry.step("crawl.web.page"), site or registry.site("crawl"),
                 settings or CrawlSettings(), None, retries=0)


def through(batch: Batch, urls: list[str], job: str = "j") -> list[UnitRun]:
    """The units of ``urls`` through every phase up to the close."""
    batch = replace(batch, envelope={**batch.envelope, "job": job})
    rt = batch.rt
    if rt.ledger.state(job) is None:
        rt.ledger.create_job(job, batch.chain.model_dump(mode="json"), {})
    step = batch.envelope["step"]
    units = [make_unit(step, {"url": u}) for u in urls]
    rt.ledger.register(job, [(u["id"], step) for u in units])
    runs = prepare(batch, [UnitRun(u, 1, True) for u in units])
    return spawn(batch, save(batch, parse(batch, fetch(batch, runs))), Outbox(), False)


def fates(runs: list[UnitRun]) -> dict[str, object]:
    return {r.unit["params"]["url"].rsplit("/", 1)[1]: r.fate for r in runs}


# -- robots.txt -----------------------------------------------------------------------
def test_a_url_robots_txt_disallows_ends_skipped_robots_and_is_never_fetched(
        runtime: Runtime) -> None:
    robots = Route(body=b"User-agent: *\nDisallow: /private/\n")
    with serve({"/robots.txt": robots, "/page": PAGE, "/private/x": PAGE}) as site:
        runs = through(crawl_batch(runtime), [f"{site.base}/page", f"{site.base}/private/x"])
    assert fates(runs) == {"page": Done(1), "x": Skipped("robots")}
    assert site.hits["/private/x"] == 0 and site.hits["/robots.txt"] == 1


def test_a_site_that_opts_out_of_robots_txt_fetches_what_it_disallows(
        runtime: Runtime) -> None:
    robots = Route(body=b"User-agent: *\nDisallow: /\n")
    with serve({"/robots.txt": robots, "/page": PAGE}) as site:
        mine = Site("crawl", settings=CrawlSettings, robots=False, politeness_per="host")
        runs = through(crawl_batch(runtime, mine), [f"{site.base}/page"])
    assert fates(runs) == {"page": Done(1)}
    assert site.hits["/robots.txt"] == 0


def test_robots_txt_answering_404_allows_everything(runtime: Runtime) -> None:
    with serve({"/page": PAGE}) as site:  # every other path answers 404
        runs = through(crawl_batch(runtime), [f"{site.base}/page"])
    assert fates(runs) == {"page": Done(1)}
    assert site.hits["/robots.txt"] == 1


def test_robots_txt_answering_500_defers_the_unit_without_spending_a_retry(
        runtime: Runtime) -> None:
    with serve({"/robots.txt": Route(500, b"down"), "/page": PAGE}) as site:
        batch = crawl_batch(runtime)
        runs = through(batch, [f"{site.base}/page"])
        [run] = runs
        assert isinstance(run.fate, RetryAfter) and run.fate.kind == "wait"
        assert run.fate.seconds == pytest.approx(runtime.settings.robots.error_backoff_s,
                                                 abs=1)
        assert "unavailable" in run.fate.reason
        closed = close(batch, runs)
    assert site.hits["/page"] == 0  # not fetched while robots.txt is down
    assert closed.retry is None and closed.counts["retry"] == 0  # no retry spent
    assert isinstance(runtime.dispatch, Recorder)
    [again] = runtime.dispatch.sent
    assert again.countdown == run.fate.seconds and again.units[0]["id"] == run.unit["id"]


def test_a_5_mb_robots_txt_is_read_up_to_500_kib_and_the_crawl_goes_on(
        runtime: Runtime) -> None:
    head = b"User-agent: *\nDisallow: /early/\n"
    filler = b"# " + b"x" * 98 + b"\n"
    body = head + filler * (MAX_BYTES // len(filler) + 10) + b"Disallow: /late/\n"
    body += filler * ((5 * 1024 * 1024 - len(body)) // len(filler))
    assert len(body) > 5_000_000
    routes = {"/robots.txt": Route(body=body), "/early/a": PAGE, "/late/b": PAGE}
    with serve(routes) as site:
        runs = through(crawl_batch(runtime), [f"{site.base}/early/a", f"{site.base}/late/b"])
    assert fates(runs) == {"a": Skipped("robots"), "b": Done(1)}  # past 500 KiB: ignored
    assert site.hits["/robots.txt"] == 1


@pytest.mark.parametrize("throttled", [True, False])
def test_crawl_delay_caps_the_hosts_rate_and_concurrency(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch, throttled: bool) -> None:
    rt = runtime if throttled else throttle_off(monkeypatch, runtime)
    robots = Route(body=b"User-agent: *\nCrawl-delay: 0.5\n")
    with serve({"/robots.txt": robots, "/page": PAGE}) as site:
        batch = crawl_batch(rt)
        assert fates(through(batch, [f"{site.base}/page"])) == {"page": Done(1)}
        bucket = politeness.bucket(batch, f"{site.base}/page")
    assert bucket == f"crawl:{site.base.removeprefix('http://')}"  # one bucket per host
    state = rt.limiter.state(bucket)
    assert (state["rate_per_s"], state["max_concurrency"]) == (pytest.approx(2.0), 1)


# -- headers --------------------------------------------------------------------------
@pytest.fixture
def shop() -> Iterator[LoopServer]:
    """The polite shop with its User-Agent check only."""
    site = PoliteSite(Catalogue(1, Shape(categories=1, items_per_category=2)),
                      PoliteDefences(rate=None, flaky_share=0.0))
    with LoopServer([(site, bind())]) as server:
        yield server


def shop_batch(rt: Runtime, server: LoopServer, site: Site | None = None) -> Batch:
    return Batch(rt, {"job": "j", "step": "index", "depth": 0}, polite,
                 registry.step("polite.web.index"), site or registry.site("polite"),
                 SiteSettings(base_url=server.url), None, retries=0)


def test_every_request_carries_a_browsers_headers_so_an_agent_check_lets_it_through(
        runtime: Runtime, shop: LoopServer) -> None:
    [run] = through(shop_batch(runtime, shop), [""])
    assert run.fate == Done(0) and run.fetch is not None and run.fetch.status == 200
    assert shop.tally.statuses() == {404: 1, 200: 1}  # robots.txt, then the index
    assert run.request is not None and run.request.headers["User-Agent"].startswith("Mozilla/5.0")


def test_a_site_sets_its_own_headers_and_browser_family_in_one_line(
        runtime: Runtime, shop: LoopServer) -> None:
    mine = Site("polite", headers=SiteHeaders(family="mobile",
                                              headers={"Accept-Language": "de-DE"}))
    [run] = prepare(shop_batch(runtime, shop, mine), [UnitRun(make_unit("index", {}), 1, True)])
    assert run.request is not None
    headers = run.request.headers
    assert headers["Accept-Language"] == "de-DE" and "text/html" in headers["Accept"]
    assert any(word in headers["User-Agent"] for word in ("Mobile", "iPhone", "Android"))


# -- the throttle, the cache, the cap ---------------------------------------------------
@pytest.mark.parametrize("throttled", [True, False])
def test_a_429_cools_the_whole_bucket_down_once(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch, throttled: bool) -> None:
    rt = runtime if throttled else throttle_off(monkeypatch, runtime)
    busy = Route(429, b"slow down", {"Retry-After": "1"})
    with serve({"/busy": busy}) as site:
        batch = crawl_batch(rt)
        runs = through(batch, [f"{site.base}/busy"])
        close(batch, runs)
        bucket = politeness.bucket(batch, f"{site.base}/busy")
    state = rt.limiter.state(bucket)
    assert 0 < state["cooldown_remaining_s"] <= 1.0
    # the throttle writes the cooldown itself: the limiter is not told a second time
    assert state["penalties"] == (0 if throttled else 1)
    if rt.throttle is not None:
        assert rt.throttle.state(bucket)["rate_limited"] == 1


def test_a_job_with_the_http_cache_replays_its_pages_and_robots_txt(runtime: Runtime) -> None:
    with serve({"/robots.txt": Route(body=b"User-agent: *\n"), "/page": PAGE}) as site:
        cached = crawl_batch(runtime, settings=CrawlSettings(http_cache=True))
        for job in ("first", "second"):
            assert fates(through(cached, [f"{site.base}/page"], job)) == {"page": Done(1)}
        assert (site.hits["/page"], site.hits["/robots.txt"]) == (1, 1)
        through(crawl_batch(runtime), [f"{site.base}/page"], "uncached")
        assert site.hits["/page"] == 2


def test_a_job_fetches_at_most_its_cap_of_a_steps_units(runtime: Runtime) -> None:
    capped = crawl.model_copy(update={"steps": {
        **crawl.steps, "page": crawl.steps["page"].model_copy(update={"max_units": 1})}})
    routes = {"/a": PAGE, "/b": PAGE}
    with serve(routes) as site:
        runs = through(crawl_batch(runtime, chain=capped), [f"{site.base}/a", f"{site.base}/b"])
        again = through(crawl_batch(runtime, chain=capped), [f"{site.base}/b"])
    assert sorted(str(f) for f in fates(runs).values()) == [
        "Done(items=1, change=None)", "Skipped(reason='max-units')"]
    assert fates(again) == {"b": fates(runs)["b"]}  # a retry is judged as before
    assert site.hits["/a"] + site.hits["/b"] == 1


def test_the_declared_politeness_is_the_throttles_hard_ceiling(runtime: Runtime) -> None:
    declared = Politeness(rate_per_s=3, max_concurrency=2)
    mine = Site("crawl", settings=CrawlSettings, politeness=declared, politeness_per="host")
    batch = crawl_batch(runtime, mine)
    [bounds] = politeness.bounds(batch, ["http://127.0.0.1:9/x"], [None])
    assert bounds.ceiling == declared
    policy = politeness.policy(batch, bounds.bucket, bounds.ceiling)
    assert policy is not None and policy.rate_per_s == 3 and policy.max_concurrency == 2


def test_a_batchs_bounds_are_one_per_host_and_crawl_delay(runtime: Runtime) -> None:
    declared = Politeness(rate_per_s=3, max_concurrency=2)
    mine = Site("crawl", settings=CrawlSettings, politeness=declared, politeness_per="host")
    urls = ["http://a.example/1", "http://a.example/2", "http://b.example/1"]
    a1, a2, b1 = politeness.bounds(crawl_batch(runtime, mine), urls, [2.0, 2.0, None])
    assert a1 is a2 and (a1.bucket, b1.bucket) == ("crawl:a.example", "crawl:b.example")
    assert a1.ceiling == Politeness(rate_per_s=0.5, burst=1, max_concurrency=1)
    assert b1.ceiling == declared


def test_a_server_that_never_pushed_back_costs_no_slot_per_request(runtime: Runtime) -> None:
    assert runtime.throttle is not None
    open_key = "crawl:wide.example"
    for _ in range(80):  # slow start: the window grows by one per good answer
        runtime.throttle.observe(open_key, [Observation(0.001, 200)])
    batch = crawl_batch(runtime)
    assert politeness.policy(batch, open_key, None) is None
    runtime.throttle.observe(open_key, [Observation(0.001, 429, 1.0)])
    closed = politeness.policy(batch, open_key, None)
    assert closed is not None and closed.rate_per_s is not None


def test_a_unit_sent_back_to_wait_keeps_the_retries_it_spent_and_still_gives_up(
        runtime: Runtime, monkeypatch: pytest.MonkeyPatch) -> None:
    """A wait travels in a new message, whose count of retries starts at 0: without the
    unit's own count, a unit failing and waiting by turns would be retried for ever."""
    monkeypatch.setenv("TASK_MAX_RETRIES", "1")
    rt = replace(runtime, settings=Settings())
    with serve({"/robots.txt": Route(500, b"down"), "/flaky": Route(503, b"busy")}) as site:
        waiting = replace(crawl_batch(rt), retries=1)  # its message was retried once
        close(waiting, through(waiting, [f"{site.base}/flaky"]))
        assert isinstance(rt.dispatch, Recorder)
        [sent] = rt.dispatch.sent
        [unit] = sent.units
        assert unit["rotation"]["retries"] == 1
        unbound = Site("crawl", settings=CrawlSettings, robots=False, politeness_per="host")
        again = crawl_batch(rt, unbound)  # a new message: retries 0; robots.txt aside
        runs = prepare(again, [UnitRun(unit, 1, False)])
        runs = parse(again, fetch(again, runs))
        closed = close(again, runs)
    assert closed.counts["failed"] == 1 and closed.retry is None
    [failure] = rt.ledger.failures("j")
    assert failure.message.startswith("gave up after 1 retries")
