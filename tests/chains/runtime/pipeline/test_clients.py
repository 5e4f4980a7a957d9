"""Which fetch client a batch's units go through: the step's own, else the job's ``client``
setting, else the site's; and a request for a client that brings its own browser is
not dressed in another's headers."""

from __future__ import annotations

import gzip
import socket
from collections.abc import Iterator
from dataclasses import replace

import pytest

from chains.demo import demo as declared_demo
from chains.runtime.checks import resolve
from chains.runtime.context import Runtime
from chains.runtime.pipeline import polite
from chains.runtime.pipeline.batch import Batch, RetryAfter, UnitRun
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.prepare import prepare
from chains.runtime.registry import step, steps
from chains.runtime.site import Site
from chains.runtime.step import step as declare
from chains.runtime.units import make_unit
from exceptions import ResponseRejected
from external_interface.http import Response
from sites.demo.site import DemoSettings
from tests.external_interface.clients.raw_server import RawServer, fixed, response

demo = resolve(declared_demo, steps())
FEED = response("200 OK", b'{"entries": []}', Content_Length="15",
                Content_Type="application/json")


@pytest.fixture
def site() -> Iterator[RawServer]:
    server = RawServer({"/h5/feed": fixed(FEED, keep=True)})
    yield server
    server.close()


def batch(rt: Runtime, base: str, site_client: str = "http", job_client: str = "",
          step_client: str | None = None) -> Batch:
    spec = step("demo.h5.feed")
    return Batch(rt, {"job": "j", "step": "feed", "depth": 0}, demo,
                 replace(spec, client=step_client),
                 Site("demo", settings=DemoSettings, client=site_client),
                 DemoSettings(base_url=base, client=job_client), None, retries=0)


def fetched(rt: Runtime, chosen: Batch) -> UnitRun:
    rt.ledger.create_job("j", demo.model_dump(mode="json"), {"page": 1})
    unit = make_unit("feed", {"page": 1})
    rt.ledger.register("j", [(unit["id"], "feed")])
    [run] = fetch(chosen, prepare(chosen, [UnitRun(unit, 1, True)]))
    return run


def agent(head: bytes) -> str:
    return next(line for line in head.decode().split("\r\n")
                if line.lower().startswith("user-agent:"))


@pytest.mark.parametrize(("site_client", "job_client", "step_client", "chosen"), [
    ("http", "", None, "http"),
    ("impersonate", "", None, "impersonate"),
    ("http", "impersonate", None, "impersonate"),
    ("impersonate", "http", None, "http"),
    ("http", "http", "impersonate", "impersonate"),
    ("impersonate", "impersonate", "http", "http"),
])
def test_the_step_then_the_job_then_the_site_names_the_client(
        runtime: Runtime, site: RawServer, site_client: str, job_client: str,
        step_client: str | None, chosen: str) -> None:
    picked = batch(runtime, site.base, site_client, job_client, step_client)
    assert polite.client(picked) == chosen
    run = fetched(runtime, picked)
    assert isinstance(run.response, Response) and run.response.status == 200
    robots, page = site.heads  # robots.txt, read with the same client, then the page
    assert robots.startswith(b"GET /robots.txt ") and page.startswith(b"GET /h5/feed?page=1 ")
    for head in (robots, page):
        assert ("Chrome/146." in agent(head)) is (chosen == "impersonate")


def test_an_impersonated_request_carries_no_bundled_browsers_headers(
        runtime: Runtime, site: RawServer) -> None:
    run = fetched(runtime, batch(runtime, site.base, "impersonate"))
    assert run.request is not None and "User-Agent" not in run.request.headers
    plain = fetched(runtime, batch(runtime, site.base, "http"))
    assert plain.request is not None and "User-Agent" in plain.request.headers


def stacked_on_page_two(conn: socket.socket, head: bytes) -> bool:
    """Page 2 gzipped ten times over (issue 32's page); the others plain."""
    if b"page=2" not in head.split(b"\r\n")[0]:
        conn.sendall(FEED)
        return True
    body = b'{"entries": []}'
    for _ in range(10):
        body = gzip.compress(body)
    conn.sendall(response("200 OK", body, Content_Length=str(len(body)),
                          Content_Type="application/json",
                          Content_Encoding=", ".join(["gzip"] * 10)))
    return False


@pytest.mark.parametrize("client_name", ["http", "impersonate"])
def test_a_page_that_no_client_decodes_fails_its_unit_and_not_its_batch(
        runtime: Runtime, client_name: str) -> None:
    """It once escaped as urllib3's DecodeError: the whole batch went down, and the page,
    retried alone, ended as "poison unit: its worker died 5 times" with no worker dead."""
    server = RawServer({"/h5/feed": stacked_on_page_two})
    try:
        chosen = batch(runtime, server.base, client_name)
        runtime.ledger.create_job("j", demo.model_dump(mode="json"), {"page": 1})
        units = [make_unit("feed", {"page": page}) for page in (1, 2, 3)]
        runtime.ledger.register("j", [(u["id"], "feed") for u in units])
        runs = list(fetch(chosen, prepare(chosen, [UnitRun(u, 1, True) for u in units])))
    finally:
        server.close()
    by_page = {r.unit["params"]["page"]: r for r in runs}
    assert by_page[1].response is not None and by_page[3].response is not None
    assert isinstance(by_page[2].error, ResponseRejected) and by_page[2].response is None
    assert "Content-Encoding" in str(by_page[2].error)


def test_an_unknown_client_fails_where_it_is_declared_naming_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"site 'shop': unknown fetch client 'curl'.*http, "
                                         r"impersonate"):
        Site("shop", client="curl")
    with pytest.raises(ValueError, match=r"step 'shop\.web\.page': unknown fetch client"):
        declare("shop.web.page", url="{base_url}/", client="chrome")
    with pytest.raises(ValueError, match="unknown fetch client 'h2'"):
        DemoSettings(client="h2")


def test_a_browser_page_waits_for_its_sites_browser_slot_and_reads_robots_over_http(
        runtime: Runtime, site: RawServer) -> None:
    """Browsers are the expensive resource: ``BROWSER_SITE_PAGES`` per site across the
    cluster, a slot like a site's ``max_concurrency``; robots.txt needs no browser."""
    from config import Politeness
    from external_interface.politeness import acquire
    from tests.external_interface.clients.browser_support import need_chromium

    need_chromium()
    runtime.settings.browser = runtime.settings.browser.model_copy(update={"site_pages": 1})
    picked = batch(runtime, site.base, step_client="browser")
    with acquire(runtime.limiter, "demo#browser", Politeness(max_concurrency=1), 1.0,
                 max_wait_s=300):  # another worker's page holds the one slot
        run = fetched(runtime, picked)
    assert isinstance(run.fate, RetryAfter) and run.fate.kind == "wait"
    assert "politeness" in run.fate.reason and run.response is None
    robots, *pages = site.heads
    assert robots.startswith(b"GET /robots.txt ") and pages == []
    assert b"HeadlessChrome" not in robots  # read by the http client
