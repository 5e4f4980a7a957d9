"""A page's record fields and outgoing links, in one pass over the parsed document.

One XPath union walks the tree once, in C, and hands back only the elements
that matter (``a``/``area`` with an href, ``base``, ``link``, ``title``,
``meta``); one Python loop reads them. The hrefs are resolved after that loop,
against ``<base href>`` wherever it stood, and almost all of them on a fast path:
an href of plain URL characters without dot segments is joined by string
concatenation to the page's origin or directory (each distinct host is checked
once, by ``utils.urls.normalize_host``); anything else (spaces, non-ASCII, dot
segments, another case of scheme, an odd host) goes through ``utils.urls.join_url``,
whose result the fast path is tested to equal. Fragments are dropped, pure
fragment links (``#top``, the page itself) and non-http schemes skipped, and the
result deduplicated in document order.

``rel="nofollow"`` (or a ``<meta name="robots" content="nofollow">`` for the
whole page) puts a link in ``nofollow`` instead of ``links``: noted, not followed.

``canon`` is the one call site for URL canonicalisation: pass the project's
canonical-URL function to get links in the form the dedup keys use (off by
default: it costs more per link than the rest of this module together).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from lxml import etree

from utils.decode import decode_body, parse_html
from utils.urls import UnsupportedURL, join_url, normalize_host, normalize_url

_NOFOLLOW = "contains(concat(' ', translate(@rel, 'NOFLW', 'noflw'), ' '), ' nofollow ')"
_FOLLOWED = etree.XPath(  # hrefs as plain strings, in document order: no element objects
    f"//a[@href][not(@rel) or not({_NOFOLLOW})]/@href"
    f" | //area[@href][not(@rel) or not({_NOFOLLOW})]/@href", smart_strings=False)
_NOTED = etree.XPath(f"//a[@rel][{_NOFOLLOW}]/@href | //area[@rel][{_NOFOLLOW}]/@href",
                     smart_strings=False)
_HEAD = etree.XPath("//title | //meta[@content] | //base[@href] | //link[@href][@rel]")
# plain URL characters, and no "." or ".." path segment (checked before any query)
_PLAIN = re.compile(r"(?!(?:[^?]*/)?\.{1,2}(?:[/?]|$))[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*")
_SKIP = ("javascript:", "mailto:", "tel:", "data:", "about:", "ftp:", "sms:", "file:")
_SPACE = re.compile(r"\s+")


class ResponseLike(Protocol):
    """What ``extract_page`` reads: the fetch's ``Response`` is one."""

    @property
    def url(self) -> str: ...

    @property
    def body(self) -> bytes: ...

    @property
    def encoding(self) -> str | None: ...

    def header(self, name: str) -> str | None: ...


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
    text = decode_body(response.body, response.header("content-type"),
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
    resolve = _Resolver(join_url(response.url, base) if base else response.url)
    if page_nofollow:
        followed, noted = [], followed + noted
    links = _resolve_all(resolve, followed, canon, set())
    nofollow = _resolve_all(resolve, noted, canon, set(links))
    canonical_url = resolve(canonical) if canonical else None
    return PageLinks(response.url, title, description, canonical_url, links, nofollow)


def _resolve_all(resolve: _Resolver, hrefs: list[str], canon: Callable[[str], str] | None,
                 seen: set[str]) -> list[str]:
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


class _Resolver:
    """``join_url(base, href)`` with a fast path for plain hrefs (see the module doc)."""

    def __init__(self, base: str | None) -> None:
        self.base = base or ""
        self.hosts: dict[str, str | None] = {}
        self.origin: str | None = None
        self.page = ""
        self.folders: list[str] = []  # the base's directory, one name a step
        try:
            parts = urlsplit(normalize_url(self.base))
        except UnsupportedURL:
            return  # every href takes the slow path (which refuses them too)
        self.origin = f"{parts.scheme}://{parts.netloc}"
        self.page = self.origin + parts.path
        if "//" not in parts.path:  # urljoin would squeeze it: leave those to it
            self.folders = parts.path.split("/")[1:-1]
        self.relative = "//" not in parts.path

    def __call__(self, href: str) -> str | None:
        href = href.strip()
        cut = href.find("#")
        if cut >= 0:
            if cut == 0:
                return None  # the page itself
            href = href[:cut]
        if not href or href[:11].lower().startswith(_SKIP):
            return None
        fast = self._fast(href) if self.origin is not None else None
        return fast if fast is not None else join_url(self.base, href)

    def _fast(self, href: str) -> str | None:
        """The joined URL by concatenation, or None when the slow path must decide."""
        first = href[0]
        if first == "/":
            if href.startswith("//") or not _PLAIN.fullmatch(href) or href.endswith("?"):
                return None
            return f"{self.origin}{href}"
        if first == "?":
            return f"{self.page}{href}" if _PLAIN.fullmatch(href) and len(href) > 1 else None
        if href.startswith(("http://", "https://")):
            if not _PLAIN.fullmatch(href) or href.endswith("?"):
                return None
            scheme, _, rest = href.partition("://")
            cut = min((i for i in (rest.find("/"), rest.find("?")) if i >= 0), default=len(rest))
            host = self._host(rest[:cut])
            if host is None:
                return None
            tail = rest[cut:]
            return f"{scheme}://{host}{tail if tail.startswith('/') else '/' + tail}"
        return self._relative(href)

    def _relative(self, href: str) -> str | None:
        """``page.html``, ``./page.html``, ``../../other/page.html`` against the base's
        directory; None for anything urljoin would treat differently."""
        if not self.relative:
            return None
        ups = 0
        while href.startswith("./"):
            href = href[2:]
        while href.startswith("../"):
            ups, href = ups + 1, href[3:]
        path = href.split("?", 1)[0]
        if (not href or href[0] == "/" or ups > len(self.folders) or ":" in href.split("/", 1)[0]
                or "//" in path or href.endswith("?") or not _PLAIN.fullmatch(href)):
            return None
        kept = self.folders[:len(self.folders) - ups]
        return f"{self.origin}/{'/'.join(kept)}{'/' if kept else ''}{href}"

    def _host(self, netloc: str) -> str | None:
        """A netloc that ``normalize_url`` would leave as it is, else None (checked once)."""
        if netloc not in self.hosts:
            self.hosts[netloc] = _plain_netloc(netloc)
        return self.hosts[netloc]


def _plain_netloc(netloc: str) -> str | None:
    if not netloc or "@" in netloc or netloc.endswith("."):
        return None
    host, colon, port = netloc.partition(":")
    if colon and (not port.isdigit() or port.startswith("0") or int(port) > 65535):
        return None
    try:
        return netloc if normalize_host(host) == host else None
    except UnsupportedURL:
        return None


def _clean_text(text: str | None) -> str | None:
    """Whitespace collapsed; None for nothing."""
    if text is None:
        return None
    cleaned = _SPACE.sub(" ", text).strip()
    return cleaned or None
