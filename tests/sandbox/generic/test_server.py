"""The generic site over HTTP: robots.txt, sitemaps, redirects and pages as a crawler meets
them, and a polite crawl of it stores exactly the expected records, counted at the server."""

from __future__ import annotations

import gzip
import http.client
import urllib.robotparser
from collections import deque
from collections.abc import Iterator
from urllib.parse import urldefrag, urljoin, urlsplit

import pytest
from parsel import Selector

from sandbox.generic.expected import Record, expected_records
from sandbox.generic.server import generic_server
from sandbox.generic.site import GenericSite, Shape
from sandbox.loop_server import LoopServer


@pytest.fixture
def served() -> Iterator[tuple[LoopServer, GenericSite]]:
    server, site = generic_server(Shape.small())
    with server:
        yield server, site


def get(url: str) -> tuple[int, dict[str, str], bytes]:
    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.netloc, timeout=5)
    conn.request("GET", parts.path or "/")
    response = conn.getresponse()
    found = response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    conn.close()
    return found


def test_robots_txt_disallows_private_sets_a_delay_and_names_the_sitemap(
        served: tuple[LoopServer, GenericSite]) -> None:
    server, _ = served
    text = get(server.url + "/robots.txt")[2].decode()
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(text.splitlines())
    assert not robots.can_fetch("AnyBot", server.url + "/private/1.html")
    assert robots.can_fetch("AnyBot", server.url + "/docs/tutorial/")
    assert "Crawl-delay: 0.05" in text.splitlines()  # the stdlib parser reads whole seconds only
    assert robots.site_maps() == [server.url + "/sitemap.xml"]


def sitemap_locs(body: bytes) -> list[str]:
    return Selector(body.decode(), type="xml").xpath("//*[local-name()='loc']/text()").getall()


def test_the_sitemap_index_leads_to_a_gzip_child_listing_the_orphans(
        served: tuple[LoopServer, GenericSite]) -> None:
    server, site = served
    children = sitemap_locs(get(server.url + "/sitemap.xml")[2])
    assert children == [server.url + "/sitemaps/main.xml", server.url + "/sitemaps/pages.xml.gz"]
    status, headers, body = get(children[1])
    assert (status, headers["content-type"], body[:2]) == (200, "application/gzip", b"\x1f\x8b")
    assert sitemap_locs(gzip.decompress(body)) == [site.url(p) for p in site.kinds("orphan")]
    assert "<lastmod>" in gzip.decompress(body).decode()


def test_a_moved_page_redirects_and_an_unknown_one_is_404(
        served: tuple[LoopServer, GenericSite]) -> None:
    server, _ = served
    status, headers, _ = get(server.url + "/moved/1.html")
    assert (status, headers["location"]) == (301, server.url + "/docs/renamed/1.html")
    assert get(server.url + "/no/such/page.html")[0] == 404


def crawl(base: str, depth: int) -> list[Record]:
    """A polite breadth-first crawl: robots obeyed, sitemap read, same host, to ``depth``."""
    robots = urllib.robotparser.RobotFileParser()
    robots.parse(get(base + "/robots.txt")[2].decode().splitlines())
    starts = [base + "/"]
    for sitemap in robots.site_maps() or []:
        for child in sitemap_locs(get(sitemap)[2]):
            body = get(child)[2]
            starts += sitemap_locs(gzip.decompress(body) if body[:2] == b"\x1f\x8b" else body)
    queue = deque((url, 0) for url in dict.fromkeys(starts))
    seen, records = set(starts), []
    while queue:
        url, d = queue.popleft()
        final = url
        status, headers, body = get(url)
        while status in (301, 302):
            final = urljoin(final, headers["location"])
            status, headers, body = get(final)
        page = Selector(body.decode())
        hrefs = page.css("a::attr(href)").getall()
        links = {urldefrag(urljoin(final, h.strip())).url for h in hrefs}
        links = {u for u in links if u.startswith(("http://", "https://"))}
        records.append(Record(url, final, status, page.css("title::text").get(),
                              page.css('meta[name="description"]::attr(content)').get(),
                              page.css('link[rel="canonical"]::attr(href)').get(),
                              tuple(sorted(links))))
        for link in sorted(links):
            if d < depth and link.startswith(base + "/") and link not in seen \
                    and robots.can_fetch("*", link):
                seen.add(link)
                queue.append((link, d + 1))
    return sorted(records, key=lambda r: r.url)


@pytest.mark.parametrize("depth", [1, 3])
def test_a_polite_crawl_stores_exactly_the_expected_records(
        served: tuple[LoopServer, GenericSite], depth: int) -> None:
    server, site = served
    assert crawl(server.url, depth) == expected_records(site, depth)
    assert server.tally.requests("/private/") == 0
    assert server.tally.requests("/deep/") == 0


def test_the_server_counts_every_request_by_path(served: tuple[LoopServer, GenericSite]) -> None:
    server, site = served
    crawl(server.url, 3)
    fetched = server.tally.requests()
    records = expected_records(site, 3)
    redirects = sum(r.url != r.final_url for r in records)
    assert fetched == len(records) + redirects + 1 + 3  # + robots.txt and three sitemaps
    assert server.tally.paths["/"] == 1
