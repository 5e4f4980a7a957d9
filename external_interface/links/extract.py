"""A page's record fields and outgoing links, in one pass over the parsed document.

One XPath union walks the tree once, in C, and hands back only the elements
that matter (``a``/``area`` with an href, ``base``, ``link``, ``title``,
``meta``); one Python loop reads them. The hrefs are resolved after that loop,
against ``<base href>`` wherever it stood, by the project's one URL canon
(``utils.urls.fetch_url``, WHATWG's rule). Fragments are dropped, links to the
page itself (``#top``, an empty href) and non-http schemes skipped, and the
result deduplicated in document order.

``rel="nofollow"`` (or a ``<meta name="robots" content="nofollow">`` for the
whole page) puts a link in ``nofollow`` instead of ``links``: noted, not followed.

``canon`` is the one call site for URL canonicalisation: pass the project's
canonical-URL function to get links in the form the dedup keys use (off by
default: it costs more per link than the rest of this module together).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from lxml import etree

from external_interface.decode import decode_body, parse_html
from utils.urls import fetch_url

_NOFOLLOW = "contains(concat(' ', translate(@rel, 'NOFLW', 'noflw'), ' '), ' nofollow ')"
_FOLLOWED = etree.XPath(  # hrefs as plain strings, in document order: no element objects
    f"//a[@href][not(@rel) or not({_NOFOLLOW})]/@href"
    f" | //area[@href][not(@rel) or not({_NOFOLLOW})]/@href", smart_strings=False)
_NOTED = etree.XPath(f"//a[@rel][{_NOFOLLOW}]/@href | //area[@rel][{_NOFOLLOW}]/@href",
                     smart_strings=False)
_HEAD = etree.XPath("//title | //meta[@content] | //base[@href] | //link[@href][@rel]")
# plain URL characters, and no "." or ".." path segment (checked before any query)
_SPACE = re.compile(r"\s+")


class ResponseLike(Protocol):
    """What ``extract_page`` reads: the fetch's ``Response`` is one."""

    @property
    def url(self) -> str: ...

    @property
    def body(self) -> bytes: ...

    @property
    def encoding(self) -> str | None: ...

    @property
    def headers(self) -> Mapping[str, str]: ...


@dataclass(frozen=True)
class PageLinks:
    """The fields of a page record a generic crawl stores, and the links to follow."""

    url: str
    title: str | None
    description: str | None
    canonical: str | None
    links: list[str]
    nofollow: list[str]


def extract_page(response: ResponseLike, canon: Callable[[str], str] | None = None
                 ) -> PageLinks:
    """Title, meta description, canonical link and outgoing links of an HTML page.

    Links are absolute http(s) URLs without fragments, deduplicated, in document
    order; ``canon`` (if given) is applied to each before deduplication.
    """
    text = decode_body(response.body, response.headers.get("content-type"),
                       declared=response.encoding).text
    if not text.strip():
        return PageLinks(response.url, None, None, None, [], [])
    root = parse_html(text)
    title = description = canonical = base = None
    page_nofollow = False
    for node in _HEAD(root):  # a handful of elements
        tag = node.tag
        if tag == "title":
            title = title or _clean_text(node.text_content())
        elif tag == "meta":
            name = (node.get("name") or "").lower()
            if name == "description" and description is None:
                description = _clean_text(node.get("content"))
            elif name in ("robots", "googlebot") and "nofollow" in node.get("content").lower():
                page_nofollow = True
        elif tag == "base":
            base = base or node.get("href")
        elif canonical is None and "canonical" in node.get("rel").lower().split():
            canonical = node.get("href")
    followed, noted = _FOLLOWED(root), _NOTED(root)
    page = (fetch_url(base, response.url) if base else None) or response.url

    def resolve(href: str) -> str | None:
        return None if href.strip()[:1] in ("", "#") else fetch_url(href, page)

    if page_nofollow:
        followed, noted = [], followed + noted
    links = _resolve_all(resolve, followed, canon, set())
    nofollow = _resolve_all(resolve, noted, canon, set(links))
    canonical_url = resolve(canonical) if canonical else None
    return PageLinks(response.url, title, description, canonical_url, links, nofollow)


def _resolve_all(resolve: Callable[[str], str | None], hrefs: list[str],
                 canon: Callable[[str], str] | None, seen: set[str]) -> list[str]:
    """Absolute links in document order, without those in ``seen`` (which grows)."""
    found: list[str] = []
    for href in hrefs:
        url = resolve(href)
        if url is None:
            continue
        if canon is not None:
            url = canon(url)
        if url not in seen:
            seen.add(url)
            found.append(url)
    return found


def _clean_text(text: str | None) -> str | None:
    """Whitespace collapsed; None for nothing."""
    if text is None:
        return None
    cleaned = _SPACE.sub(" ", text).strip()
    return cleaned or None
