"""The generic crawl's steps on pages written here: the record, the links it follows, sitemaps."""

from __future__ import annotations

import gzip
from typing import Any

from chains.runtime.extensions import UnitContext
from external_interface.http import Response
from sites.crawl import CrawlPage, CrawlSettings, PageRecord, SitemapFile, page, sitemap

BASE = "http://docs.example.org"
HTML = {"Content-Type": "text/html; charset=utf-8"}
PAGE = b"""<!DOCTYPE html><html><head><title> The  guide </title>
<meta name="description" content="How to crawl."><link rel="canonical" href="/guide/">
</head><body>
<a href="/a.html#part">a</a> <a href="b.html">b</a> <a href="#top">top</a>
<a href="https://cdn.docs.example.org/c.html">sub-domain</a>
<a href="https://other.example/x">off-site</a> <a href="/manual.pdf">pdf</a>
<a href="/private/d.html">private</a> <a href="/e.html" rel="nofollow">noted</a>
<a href="mailto:x@docs.example.org">mail</a>
</body></html>"""


def unit(settings: CrawlSettings, params: Any = None) -> UnitContext:
    return UnitContext("j", "page", "crawl.web.page", "u", params, 0, settings)


def followed(settings: CrawlSettings) -> list[str]:
    parsed = page(CrawlPage(url=f"{BASE}/guide/"),
                  Response(f"{BASE}/guide/", 200, HTML, PAGE), unit(settings))
    return [r["url"] for r in parsed.follow["links"]]


def test_a_page_is_one_record_with_its_fields_and_every_outgoing_link() -> None:
    parsed = page(CrawlPage(url=f"{BASE}/old"), Response(f"{BASE}/guide/", 200, HTML, PAGE),
                  unit(CrawlSettings()))
    [record] = parsed.items
    assert isinstance(record, PageRecord)
    assert (record.url, record.final_url, record.status) == (f"{BASE}/old", f"{BASE}/guide/",
                                                              200)
    assert (record.title, record.description, record.canonical) == (
        "The guide", "How to crawl.", f"{BASE}/guide/")
    assert record.links == sorted([f"{BASE}/a.html", f"{BASE}/guide/b.html",
                                   "https://cdn.docs.example.org/c.html",
                                   "https://other.example/x", f"{BASE}/manual.pdf",
                                   f"{BASE}/private/d.html", f"{BASE}/e.html"])


def test_links_are_followed_on_the_pages_own_domain_never_to_files_or_nofollow() -> None:
    assert followed(CrawlSettings()) == [f"{BASE}/a.html", f"{BASE}/guide/b.html",
                                         "https://cdn.docs.example.org/c.html",
                                         f"{BASE}/private/d.html"]


def test_allowed_domains_allow_and_deny_patterns_narrow_what_is_followed() -> None:
    assert followed(CrawlSettings(allow_domains=["other.example"])) == [
        "https://other.example/x"]
    assert followed(CrawlSettings(allow=[r"/guide/"], deny=[])) == [f"{BASE}/guide/b.html"]
    assert followed(CrawlSettings(deny=[r"/private/", r"cdn\."])) == [
        f"{BASE}/a.html", f"{BASE}/guide/b.html"]


def test_a_not_found_page_is_a_record_with_its_status() -> None:
    body = b"<html><head><title>Not found</title></head><body><a href='/'>home</a></body></html>"
    parsed = page(CrawlPage(url=f"{BASE}/gone"), Response(f"{BASE}/gone", 404, HTML, body),
                  unit(CrawlSettings()))
    [record] = parsed.items
    assert isinstance(record, PageRecord) and (record.status, record.title) == (404, "Not found")
    assert parsed.follow["links"] == [{"url": f"{BASE}/"}]


def urlset(*locs: str) -> bytes:
    return ('<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<url><loc>{loc}</loc><lastmod>2024-05-01</lastmod></url>" for loc in locs)
            + "</urlset>").encode()


def index(*locs: str) -> bytes:
    return ('<?xml version="1.0"?><sitemapindex '
            'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
            + "".join(f"<sitemap><loc>{loc}</loc></sitemap>" for loc in locs)
            + "</sitemapindex>").encode()


def read(body: bytes, level: int = 0, settings: CrawlSettings | None = None
         ) -> dict[str, list[dict[str, Any]]]:
    url = f"{BASE}/sitemap.xml"
    return sitemap(SitemapFile(url=url, level=level),
                   Response(url, 200, {"Content-Type": "application/xml"}, body),
                   unit(settings or CrawlSettings())).follow


def test_a_sitemaps_pages_go_to_the_page_step_on_the_crawls_domains_only() -> None:
    found = read(gzip.compress(urlset(f"{BASE}/orphan.html", "https://other.example/o.html")))
    assert found == {"pages": [{"url": f"{BASE}/orphan.html"}], "sitemaps": []}


def test_an_index_hands_its_children_one_level_down_until_the_depth_is_spent() -> None:
    children = index(f"{BASE}/s1.xml.gz", "https://other.example/s2.xml")
    assert read(children)["sitemaps"] == [{"url": f"{BASE}/s1.xml.gz", "level": 1}]
    assert read(children, level=2)["sitemaps"] == []  # sitemap_depth 2: no deeper
    assert read(children, level=0, settings=CrawlSettings(sitemap_depth=0))["sitemaps"] == []


def test_a_sitemap_yields_at_most_its_entry_cap() -> None:
    body = urlset(*(f"{BASE}/p{n}.html" for n in range(10)))
    assert len(read(body, settings=CrawlSettings(sitemap_entries=3))["pages"]) == 3
