"""The polite site over HTTP: its defences answer as a real site's do, and a crawler that
waits as told and sends a browser's agent gets every record the seed promises."""

from __future__ import annotations

import http.client
import time
from collections import deque
from collections.abc import Iterator
from typing import Any

import pytest
from parsel import Selector

from sandbox.loop_server import LoopServer, bind
from sandbox.polite.catalogue import Catalogue, Shape
from sandbox.polite.defences import PoliteDefences, flaky_targets
from sandbox.polite.site import PoliteSite
from tests.sandbox.polite.test_defences import CHROME

SMALL = Shape(categories=2, items_per_category=30, per_page=10)  # 1 + 6 + 60 = 67 requests


class Client:
    """One keep-alive connection from a chosen loopback address (the address the site sees)."""

    def __init__(self, url: str, agent: str | None = CHROME, source: str = "127.0.0.1") -> None:
        self.conn = http.client.HTTPConnection(url.removeprefix("http://"), timeout=5,
                                               source_address=(source, 0))
        self.agent = agent

    def get(self, target: str) -> tuple[int, dict[str, str], bytes]:
        headers = {"User-Agent": self.agent} if self.agent is not None else {}
        self.conn.request("GET", target, headers=headers)
        response = self.conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()


def serve(defences: PoliteDefences, shape: Shape = SMALL) -> LoopServer:
    return LoopServer([(PoliteSite(Catalogue(1, shape), defences), bind())]).start_in_thread()


@pytest.fixture
def defended() -> Iterator[LoopServer]:
    server = serve(PoliteDefences(rate=50, burst=10))
    yield server
    server.close()


def test_a_burst_beyond_the_bucket_gets_429_with_retry_after(defended: LoopServer) -> None:
    client = Client(defended.url)
    statuses = [client.get("/")[0] for _ in range(15)]
    assert statuses[:10] == [200] * 10
    assert set(statuses[10:]) == {429}
    status, headers, _ = client.get("/")
    assert (status, headers["Retry-After"]) == (429, "1")
    assert defended.tally.statuses("127.0.0.1")[429] == 6


def test_the_bucket_is_kept_per_client_address(defended: LoopServer) -> None:
    first, second = Client(defended.url), Client(defended.url, source="127.0.0.2")
    assert {first.get("/")[0] for _ in range(12)} == {200, 429}
    assert {second.get("/")[0] for _ in range(10)} == {200}
    assert defended.tally.statuses("127.0.0.2") == {200: 10}


@pytest.mark.parametrize("agent", [None, "python-urllib3/2.2.2", "Scrapy/2.13 (+https://scrapy.org)"])
def test_a_library_agent_gets_403(defended: LoopServer, agent: str | None) -> None:
    assert Client(defended.url, agent).get("/")[0] == 403


def test_the_first_request_of_a_flaky_url_gets_503_and_the_next_succeeds() -> None:
    server = serve(PoliteDefences(rate=None))
    paths = Catalogue(1, SMALL).chain_paths()
    flaky = flaky_targets(1, paths, 0.10)
    client = Client(server.url)
    first = {path: client.get(path)[0] for path in paths}
    second = {path: client.get(path)[0] for path in flaky}
    server.close()
    assert flaky and {p for p, status in first.items() if status == 503} == flaky
    assert set(second.values()) == {200}
    assert server.tally.statuses() == {200: len(paths), 503: len(flaky)}


def test_undefended_it_serves_anyone_at_any_pace() -> None:
    server = serve(PoliteDefences.off())
    client = Client(server.url, agent="python-urllib3/2.2.2")
    statuses = [client.get(path)[0] for path in Catalogue(1, SMALL).chain_paths()]
    server.close()
    assert set(statuses) == {200}


def crawl(url: str) -> tuple[list[dict[str, Any]], int]:
    """Follow the chain breadth-first as a polite crawler would: wait on 429/503, parse items."""
    client, queue, records, requests = Client(url), deque(["/"]), [], 0
    while queue:
        target = queue.popleft()
        status, headers, body = client.get(target)
        requests += 1
        if status in (429, 503):
            time.sleep(float(headers.get("Retry-After", "0.05")))
            queue.appendleft(target)
            continue
        assert status == 200, (target, status)
        page = Selector(body.decode())
        queue.extend(page.css("a.category::attr(href), a.next::attr(href)").getall()
                     if not page.css("article") else [])
        queue.extend(page.css("a.item::attr(href)").getall())
        for article in page.css("article"):
            records.append({"id": int(article.attrib["data-id"]),
                            "category": article.css("a.category::text").get(),
                            "title": article.css("h1.title::text").get(),
                            "price": float(article.css(".price::text").get("")),
                            "sku": article.css(".sku::text").get()})
    return records, requests


def test_a_polite_crawl_gets_exactly_the_expected_records() -> None:
    server = serve(PoliteDefences())  # the benchmark's defences: 50/s, burst 50, 503s, agents
    records, requests = crawl(server.url)
    server.close()
    catalogue = Catalogue(1, SMALL)
    assert sorted(records, key=lambda r: r["id"]) == catalogue.expected_records()
    statuses = server.tally.statuses("127.0.0.1")
    assert statuses[200] == len(catalogue.chain_paths())
    assert statuses[503] == len(flaky_targets(1, catalogue.chain_paths(), 0.10))
    assert requests == sum(statuses.values())
