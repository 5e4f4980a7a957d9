"""A page's record fields and links, in one pass; links are what the URL canon gives."""

from __future__ import annotations

import html
import itertools

import pytest

from external_interface.http import Response
from external_interface.links.extract import extract_page
from utils.fingerprint import canonical_url
from utils.urls import fetch_url

PAGE = """<!doctype html><html><head>
<title>  The   Title
</title>
<meta name="Description" content=" About  this page ">
<link rel="stylesheet" href="/style.css">
<link rel="alternate canonical" href="/canonical-page">
</head><body>
<a href="/a">a</a> <a href="b.html">b</a> <a href="/a#part">a again</a>
<a href="#top">top</a> <a href="javascript:void(0)">js</a> <a href="mailto:x@y.z">mail</a>
<a href="https://other.example.com/x?y=1">other</a>
<a href="/sponsored" rel="sponsored NoFollow">ad</a>
<map><area href="/area" alt=""></map>
<a>no href</a> <a href="  /spaced  ">spaced</a>
<svg><title>an icon</title></svg>
</body></html>"""


def page(html: str, url: str = "https://example.org/dir/index.html",
         content_type: str = "text/html; charset=utf-8") -> Response:
    return Response(url, 200, {"Content-Type": content_type}, html.encode())


def test_the_record_fields_and_links_of_a_page() -> None:
    found = extract_page(page(PAGE))
    assert found.title == "The Title"
    assert found.description == "About this page"
    assert found.canonical == "https://example.org/canonical-page"
    assert found.links == [
        "https://example.org/a", "https://example.org/dir/b.html",
        "https://other.example.com/x?y=1", "https://example.org/area",
        "https://example.org/spaced"]
    assert found.nofollow == ["https://example.org/sponsored"]


def test_base_href_applies_to_every_link_wherever_it_stands() -> None:
    html = ('<html><body><a href="x">x</a></body>'
            '<head><base href="https://cdn.example.org/root/"></head></html>')
    found = extract_page(page(html))
    assert found.links == ["https://cdn.example.org/root/x"]


def test_a_page_wide_nofollow_notes_every_link() -> None:
    html = '<head><meta name="robots" content="noindex, NOFOLLOW"></head><a href="/x">x</a>'
    found = extract_page(page(html))
    assert found.links == [] and found.nofollow == ["https://example.org/x"]


def test_the_canon_call_site_dedups_in_canonical_form() -> None:
    html = '<a href="/p?b=2&a=1">1</a><a href="/p?a=1&b=2">2</a>'
    assert len(extract_page(page(html)).links) == 2
    assert extract_page(page(html), canon=canonical_url).links == [
        "https://example.org/p?a=1&b=2"]


def test_charset_and_empty_pages() -> None:
    latin = Response("http://example.org/", 200, {"Content-Type": "text/html; charset=latin-1"},
                     '<title>caf\xe9</title><a href="/caf\xe9">c</a>'.encode("latin-1"))
    found = extract_page(latin)
    assert found.title == "café" and found.links == ["http://example.org/caf%C3%A9"]
    empty = extract_page(page(""))
    assert empty.links == [] and empty.title is None


HREFS = [
    "/a", "/a/b/c.html", "b.html", "sub/b.html", "?q=2", "?", "x?", "/x?a=b?c",
    "/p(1)!$'*+,;=:@", "/p%2f%zz", "/p%7E", "/[x]", "/x|y", "/\u00fc", "//other.com/x",
    "./a", "../a", "/a/./b", "/a/../b", ".", "..", "a/..", "http://a.com", "http://a.com?x=1",
    "http://a.com:80/x", "http://a.com:0080/x", "http://a.com./x", "HTTP://A.com/x",
    "http://A.com/x", "https://user:pw@a.com/x", "http://0x7f.1/x", "http://127.0.0.1:8765/x",
    "http://[::1]:80/x", "http://xn--caf-dma.com/x", "http://caf\u00e9.com/x", "a b", "/x y",
    "/x\ty", "mailto:a@b", "javascript:x", "JavaScript:x", "data:,x", "tel:1", "ftp://a/x",
    "x:y", "1:2", "/x#", "#top", "/x#frag", "/x~y", '/x"y', "/x{y}", "/x^y", "/x`y",
    "\\\\evil.com/x", "/\\evil", "http:/x", "http:x", "https://a.com", "https://a.com/",
    "https://-bad-.com/x", "https://a..com/x", "http://a.com:99999/x", "http://a.com:/x",
    "//a.com", "///x", "   /trim   ", "/x?y=1&z=%20", "/x%", "%41", "a%2Fb",
    "a//b", "/a//b", "x/./y", "../../a", "../../../../a", "./../x", "../x?y=../z", "../",
    "./", "..?x", ".?x", "/x?a=/../b", "?a=./b", "a/b/../c", "./x/../y", "http://a.com/../x",
    "http://a.com/x/./y", "../a//b", "?x#y", "./?x", "..//x",
]
BASES = ["https://example.org/dir/index.html?q=1", "http://Example.ORG:8080/", "http://h/",
         "https://example.org/dir/", "http://127.0.0.1:8765/a/b", "http://h/a/b/c/d.html",
         "http://h/a//b/c.html", "http://h/a/b/"]


@pytest.mark.parametrize("base", BASES)
def test_links_are_what_the_url_canon_gives(base: str) -> None:
    joined = [href + suffix for href, suffix in itertools.product(HREFS, ["", "#f", "?z=1"])]
    anchors = "".join(f'<a href="{html.escape(h)}">x</a>' for h in joined)
    page = Response(base, 200, {"Content-Type": "text/html"},
                    f"<html><body>{anchors}</body></html>".encode())
    expected = [fetch_url(h, base) for h in joined if not h.strip().startswith("#")]
    want = list(dict.fromkeys(u for u in expected if u is not None))
    assert extract_page(page).links == want
