"""The Response a parser reads: Scrapy's words (css, xpath, json, urljoin, follow), headers
in any case, and the server's clock; a Request's copies."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

from external_interface.http import Request, Response

PAGE = b"""<html><head><link rel="next" href="/list?page=3"><title>Caf\xc3\xa9</title></head>
<body><a class="item" href="a.html">A</a><a class="item" href="/b.html#top">B</a>
<a class="item" href="a.html">A again</a><a class="item" href="javascript:void(0)">x</a>
<a class="item" href="mailto:me@example.com">m</a></body></html>"""


def page(**headers: str) -> Response:
    return Response("http://example.com/dir/list?page=2", 200,
                    {"Content-Type": "text/html; charset=utf-8", **headers}, PAGE)


def test_css_and_xpath_are_parsel_selectors_over_the_page() -> None:
    response = page()
    assert response.css("title::text").get() == "Café"
    assert response.xpath("//a[@class='item']/text()").getall()[:2] == ["A", "B"]


def test_headers_are_found_in_any_case() -> None:
    response = page(**{"X-Token": "t"})
    assert response.headers["content-type"].startswith("text/html")
    assert response.headers.get("x-TOKEN") == "t"


def test_date_is_the_servers_clock_and_none_without_one() -> None:
    assert page(Date="Fri, 20 Nov 2026 12:00:00 GMT").date == datetime(2026, 11, 20, 12,
                                                                        tzinfo=UTC)
    assert page().date is None and page(Date="soon").date is None


def test_urljoin_makes_links_absolute_and_drops_what_cannot_be_fetched() -> None:
    response = page()
    assert response.urljoin("a.html") == "http://example.com/dir/a.html"
    assert response.urljoin("javascript:void(0)") is None


def test_follow_all_makes_records_for_the_next_step_once_per_url() -> None:
    hrefs = page().css("a.item::attr(href)").getall()
    assert page().follow_all(hrefs, kind="item") == [
        {"url": "http://example.com/dir/a.html", "kind": "item"},
        {"url": "http://example.com/b.html", "kind": "item"}]


def test_next_link_reads_rel_next_and_is_none_on_a_last_page() -> None:
    assert page().next_link() == {"url": "http://example.com/list?page=3"}
    last = Response("http://example.com/list", 200, {"Content-Type": "text/html"},
                    b"<html><body><p>end</p></body></html>")
    assert last.next_link() is None


def test_json_bodies_parse() -> None:
    response = Response("http://example.com/api", 200, {"Content-Type": "application/json"},
                        b'{"items": [1, 2]}')
    assert response.json() == {"items": [1, 2]}


def test_a_requests_copy_with_changes_is_what_dataclasses_replace_makes() -> None:
    request = Request("http://example.com/a", params={"q": "1"}, headers={"A": "1"},
                      accept_statuses=(404,))
    copy = request.replace(headers={"B": "2"}, proxy="http://p:1")
    assert copy == replace(request, headers={"B": "2"}, proxy="http://p:1")
    assert request.headers == {"A": "1"} and request.proxy is None  # the original unchanged
    assert request.with_headers(B="2").headers == {"A": "1", "B": "2"}
