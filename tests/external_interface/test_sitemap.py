"""Sitemaps: url sets, indexes, gzip, text; bombs, entities and caps."""

from __future__ import annotations

import gzip
import tracemalloc
from datetime import UTC, datetime, timedelta, timezone

import pytest

from config import FetchSettings
from exceptions import ParseError, ResponseRejected
from external_interface.clients.http import HttpClient
from external_interface.http import Request, Response
from external_interface.sitemap import MAX_ENTRIES, parse_lastmod, parse_sitemap, walk_sitemaps
from tests.external_interface.robots.site import Route, serve

NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
BASE = "https://example.org/sitemap.xml"


def urlset(*locs: str, lastmod: str | None = None) -> bytes:
    mod = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    rows = "".join(f"<url><loc>{loc}</loc>{mod}<priority>0.5</priority></url>" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset {NS}>{rows}</urlset>'.encode()


def index(*locs: str) -> bytes:
    rows = "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sitemapindex {NS}>{rows}</sitemapindex>'.encode()


def test_a_urlset_yields_absolute_locations_with_aware_lastmods() -> None:
    page = parse_sitemap(urlset("https://example.org/a", " https://example.org/b?x=1 ",
                                lastmod="2024-05-01T10:00:00+02:00"), BASE)
    assert page.kind == "urlset" and not page.truncated and page.sitemaps == []
    assert [e.loc for e in page.entries] == ["https://example.org/a",
                                            "https://example.org/b?x=1"]
    assert page.entries[0].lastmod == datetime(2024, 5, 1, 8, tzinfo=UTC)


def test_an_index_yields_child_sitemaps() -> None:
    page = parse_sitemap(index("https://example.org/s1.xml.gz", "/s2.xml"), BASE)
    assert page.kind == "index" and page.entries == []
    assert [s.loc for s in page.sitemaps] == ["https://example.org/s1.xml.gz",
                                             "https://example.org/s2.xml"]


def test_a_gzip_sitemap_is_read_and_a_gzip_bomb_is_stopped_at_the_cap() -> None:
    page = parse_sitemap(gzip.compress(urlset("https://example.org/z")), BASE)
    assert [e.loc for e in page.entries] == ["https://example.org/z"]
    bomb = gzip.compress(b"<urlset>" + b" " * (200 * 1024 * 1024))
    tracemalloc.start()
    with pytest.raises(ResponseRejected, match="cap"):
        parse_sitemap(bomb, BASE, max_decoded_bytes=10 * 1024 * 1024)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 40 * 1024 * 1024  # never inflated the 200 MB


def test_billion_laughs_expands_nothing() -> None:
    lol = ['<!ENTITY lol "lol">'] + [
        f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">'
        for i in range(1, 10)]
    doc = (f'<?xml version="1.0"?><!DOCTYPE urlset [{"".join(lol)}]>'
           f'<urlset {NS}><url><loc>https://example.org/&lol9;</loc></url>'
           f'<url><loc>https://example.org/ok</loc></url></urlset>').encode()
    tracemalloc.start()
    try:
        page = parse_sitemap(doc, BASE)
        locs = [e.loc for e in page.entries]
        assert "https://example.org/ok" in locs
        assert all(len(loc) < 100 for loc in locs)  # nothing expanded
    except ParseError:
        pass  # refusing the document outright is as safe
    assert tracemalloc.get_traced_memory()[1] < 20 * 1024 * 1024
    tracemalloc.stop()


def test_an_external_entity_is_never_read(tmp_path: object) -> None:
    doc = (f'<?xml version="1.0"?><!DOCTYPE urlset [<!ENTITY xxe SYSTEM "file:///etc/passwd">'
           f'<!ENTITY net SYSTEM "http://127.0.0.1:9/x">]>'
           f'<urlset {NS}><url><loc>&xxe;</loc></url><url><loc>https://example.org/&net;</loc>'
           f'</url></urlset>').encode()
    page = parse_sitemap(doc, BASE)
    assert all("root:" not in e.loc for e in page.entries)
    assert all(e.loc.startswith("https://example.org/") for e in page.entries)


def test_a_60000_entry_file_is_cut_at_the_protocols_50000() -> None:
    body = urlset(*(f"https://example.org/p/{i}" for i in range(60_000)))
    page = parse_sitemap(body, BASE)
    assert len(page.entries) == MAX_ENTRIES and page.truncated
    assert page.entries[-1].loc == "https://example.org/p/49999"
    assert len(parse_sitemap(body, BASE, max_entries=10).entries) == 10


def test_a_text_sitemap_lists_one_url_a_line_and_garbage_is_refused() -> None:
    page = parse_sitemap(b"https://example.org/a\n\nhttps://example.org/b\nnot a url\n", BASE)
    assert page.kind == "text" and [e.loc for e in page.entries] == [
        "https://example.org/a", "https://example.org/b"]
    with pytest.raises(ParseError, match="not a sitemap"):
        parse_sitemap(b"<html><body>Not found</body></html>", BASE)
    with pytest.raises(ParseError, match="not a sitemap"):
        parse_sitemap(b"\x00\x01binary junk", BASE)


def test_a_namespace_free_sloppy_sitemap_with_a_bom_is_read() -> None:
    body = b"\xef\xbb\xbf<urlset><url><loc>/rel</loc><lastmod>2024-05</lastmod></url></urlset>"
    entry = parse_sitemap(body, BASE).entries[0]
    assert entry.loc == "https://example.org/rel"
    assert entry.lastmod == datetime(2024, 5, 1, tzinfo=UTC)


@pytest.mark.parametrize(("text", "expected"), [
    ("2024", datetime(2024, 1, 1, tzinfo=UTC)),
    ("2024-05-01", datetime(2024, 5, 1, tzinfo=UTC)),
    ("2024-05-01T10:00Z", datetime(2024, 5, 1, 10, tzinfo=UTC)),
    ("2024-05-01T10:00:00.5-05:00",
     datetime(2024, 5, 1, 10, 0, 0, 500_000, tzinfo=timezone(timedelta(hours=-5)))),
    ("yesterday", None), ("", None), (None, None), ("2024-13-01", None),
])
def test_lastmod_is_an_aware_datetime_or_none(text: str | None,
                                              expected: datetime | None) -> None:
    assert parse_lastmod(text) == expected


def test_an_index_of_indexes_is_walked_to_a_bounded_depth_each_file_once() -> None:
    routes: dict[str, Route] = {}
    with serve(routes) as site:
        base = site.base
        routes.update({
            "/root.xml": Route(body=index(f"{base}/mid.xml", f"{base}/pages.xml.gz")),
            "/mid.xml": Route(body=index(f"{base}/deep.xml", f"{base}/root.xml")),
            "/deep.xml": Route(body=index(f"{base}/deepest.xml")),
            "/deepest.xml": Route(body=urlset(f"{base}/too-deep")),
            "/pages.xml.gz": Route(body=gzip.compress(urlset(f"{base}/a", f"{base}/b"))),
        })
        fetcher = HttpClient(FetchSettings())

        def fetch(url: str) -> Response:
            return fetcher.fetch_raw(Request(url))

        found = [e.loc for e in walk_sitemaps([f"{base}/root.xml"], fetch, max_depth=2)]
        assert found == [f"{base}/a", f"{base}/b"]
        assert site.hits["/root.xml"] == 1  # the loop back to the root is not followed
        assert site.hits["/deepest.xml"] == 0  # depth 3
        everything = list(walk_sitemaps([f"{base}/root.xml"], fetch, max_depth=3))
        assert f"{base}/too-deep" in [e.loc for e in everything]
        assert len(list(walk_sitemaps([f"{base}/root.xml"], fetch, max_depth=3,
                                      max_entries=1))) == 1


def test_a_failing_child_sitemap_is_skipped() -> None:
    routes: dict[str, Route] = {}
    with serve(routes) as site:
        routes["/root.xml"] = Route(body=index(f"{site.base}/gone.xml", f"{site.base}/ok.xml"))
        routes["/ok.xml"] = Route(body=urlset(f"{site.base}/page"))
        fetcher = HttpClient(FetchSettings())
        found = list(walk_sitemaps([f"{site.base}/root.xml"],
                                   lambda url: fetcher.fetch_raw(Request(url))))
    assert [e.loc for e in found] == [f"{site.base}/page"]
