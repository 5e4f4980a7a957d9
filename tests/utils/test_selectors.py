"""PageSelector answers every query as parsel's own Selector does, on the same tree."""

from __future__ import annotations

from typing import Any

import lxml.html
import pytest
from parsel import Selector

from utils.selectors import PageSelector

PAGE = b"""<!doctype html><html><head><title>T</title>
<link rel="next alternate" href="/p/2"></head><body>
<article class="thread" data-thread-id="7"><h1>Title &amp; more</h1>
<div class="post op" data-post-id="1"><a class="author" data-user-id="5">Ada</a>
<span class="score">1.2k</span><div class="body"><p>first <b>bold</b> tail</p></div></div>
<div class="post" data-post-id="2"><a class="author" data-user-id="6">Bob</a>
<span class="score">3</span><div class="body"><p>second</p></div></div>
</article><p class="empty"></p></body></html>"""

XML = b"""<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">
<url><loc>https://a.example/1</loc></url><url><loc>https://a.example/2</loc></url></urlset>"""


def both() -> tuple[Selector, PageSelector]:
    root = lxml.html.document_fromstring(PAGE)
    return Selector(root=root, type="html"), PageSelector(root=root, type="html")


def answers(sel: Selector) -> list[Any]:
    """What a parse reads from the page, through every kind of result."""
    posts = sel.css("article.thread div.post")
    return [
        sel.css("h1::text").get(), sel.css("title::text").getall(),
        sel.css("[rel~=next]::attr(href)").get(), sel.css("p.empty::text").get("none"),
        sel.css("article").attrib, [p.attrib["data-post-id"] for p in posts],
        [p.css("a.author::attr(data-user-id)").get() for p in posts],
        [p.css(".body p::text").getall() for p in posts],
        [p.css(".body p").get() for p in posts], [p.xpath("./@class").get() for p in posts],
        sel.xpath("count(//div)").get(), sel.xpath("//b/text()").get(),
        sel.xpath("//div[@data-post-id=$n]/a/text()", n="2").get(),
        sel.xpath("//a[re:test(@data-user-id, '^6$')]/text()").get(),
        posts.css(".score::text").re(r"[\d.]+"), [type(s).__name__ for s in posts],
        sel.css("missing").get(), sel.css("a.author::text").getall(),
    ]


def test_every_answer_is_parsels() -> None:
    plain, fast = both()
    got, want = answers(fast), answers(plain)
    assert got[:-3] == want[:-3] and got[-2:] == want[-2:]
    assert got[-3] == ["PageSelector", "PageSelector"]  # results stay PageSelectors


def test_a_result_behaves_as_parsels_result() -> None:
    plain, fast = both()
    for a, b in ((plain.css("div.post")[0], fast.css("div.post")[0]),
                 (plain.css("h1::text")[0], fast.css("h1::text")[0])):
        assert (b.type, b.namespaces, b._expr, b.get()) == (a.type, a.namespaces, a._expr, a.get())
        assert b.css("*").getall() == a.css("*").getall()


def test_a_namespace_registered_on_one_result_stays_there() -> None:
    _, fast = both()
    first, second = fast.css("div.post")
    first.register_namespace("x", "urn:x")
    assert "x" in first.namespaces and "x" not in second.namespaces
    assert first.xpath("./a/text()").get() == "Ada"  # the registered prefix: parsel's path


def test_a_bad_query_is_a_value_error_naming_it() -> None:
    _, fast = both()
    with pytest.raises(ValueError, match="//div\\[") as err:
        fast.xpath("//div[")
    assert "XPath error" in str(err.value)


def test_xml_documents_take_namespaces_as_parsel_does() -> None:
    fast = PageSelector(text=XML.decode(), type="xml")
    plain = Selector(text=XML.decode(), type="xml")
    query = "//s:loc/text()"
    spaces = {"s": "http://www.sitemaps.org/schemas/sitemap/0.9"}
    assert fast.xpath(query, namespaces=spaces).getall() == \
        plain.xpath(query, namespaces=spaces).getall() == ["https://a.example/1",
                                                            "https://a.example/2"]
    fast.remove_namespaces()
    assert fast.css("loc::text").getall() == ["https://a.example/1", "https://a.example/2"]
