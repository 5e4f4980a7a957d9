"""What a step builds and what it parses: ``Request`` and ``Response``, values only.

``Response`` speaks a Scrapy user's words: ``status``, ``url``, ``headers`` (any case),
``text``, ``json()``, ``css()`` and ``xpath()`` (parsel selectors), ``urljoin()`` and
``follow()`` for the next unit, and ``date``, the server's own clock, to normalise
relative times ("3 hours ago") against. Nothing here touches the network: the
fetch clients (``external_interface.clients``) make these values, the pipeline hands them on.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from functools import cached_property
from typing import Any
from urllib.parse import urlencode

from parsel import Selector, SelectorList
from urllib3 import HTTPHeaderDict

from external_interface.decode import (
    HtmlElement,
    XmlElement,
    decode_body,
    html_selector,
    parse_html,
    parse_xml,
)
from utils.selectors import PageSelector
from utils.urls import fetch_url

# Media types a step can ask for (``Request.accept_types``); a 2xx of another declared
# type is refused after its headers, body unread. ``PAGE_TYPES`` is what a step that
# parses HTML or JSON wants; a sitemap step wants ``SITEMAP_TYPES``.
HTML_TYPES = ("text/html", "application/xhtml+xml")
JSON_TYPES = ("application/json", "text/json", "application/*+json")
XML_TYPES = ("application/xml", "text/xml", "application/*+xml")
PAGE_TYPES = (*HTML_TYPES, *JSON_TYPES, "text/plain")
SITEMAP_TYPES = (*XML_TYPES, "text/plain",  # the sitemap protocol allows a text sitemap
                 "application/gzip", "application/x-gzip",  # sitemap.xml.gz
                 "application/octet-stream", "binary/octet-stream")  # .gz from object stores


@dataclass(frozen=True)
class Browse:
    """What a ``browser`` step does on its page before the DOM is read, in this order:
    click each of ``click`` (CSS selectors, each waited for); wait for ``wait_for`` (a
    CSS selector) to appear; scroll to the bottom up to ``scroll`` times, stopping
    once ``scroll_until`` appears (a page that never shows it fails) or, without it,
    once the page stops growing; wait for the network to be
    idle (``idle``); take a full-page PNG (``screenshot``: ``Response.screenshot``).
    ``block``: the resource types never requested (Playwright's names: ``image``,
    ``font``, ``media``, ``stylesheet``, ...); images, fonts and media by default.

        @step(url="{base}/app", client="browser", browse=Browse(wait_for="li.row"))
    """

    wait_for: str | None = None
    click: tuple[str, ...] = ()
    scroll: int = 0
    scroll_until: str | None = None
    idle: bool = False
    screenshot: bool = False
    block: tuple[str, ...] = ("image", "font", "media")


@dataclass(frozen=True)
class Request:
    """What a step's request builder returns; providers transform it before the fetch.

    ``accept_types``: media types the step can parse (``text/html``, ``text/*``,
    ``application/*+json``). A 2xx response of another declared type is refused
    once its headers arrive, unread; one with no Content-Type is let through.
    Empty accepts anything.

    ``accept_statuses``: statuses besides 2xx that the step parses as a page (Scrapy's
    ``handle_httpstatus_list``): a generic crawl stores a 404 page as a record. The
    runtime does not turn them into errors, and the development cache keeps them as
    it keeps a 2xx.

    ``meta``: values for the providers, never sent (like Scrapy's ``Request.meta``):
    a login step puts the captcha image there for the captcha provider to solve.
    """

    url: str
    method: str = "GET"
    params: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    cookies: dict[str, str] = field(default_factory=dict)
    data: bytes | None = None
    proxy: str | None = None
    accept_types: tuple[str, ...] = ()
    meta: dict[str, str] = field(default_factory=dict)
    accept_statuses: tuple[int, ...] = ()
    browse: Browse | None = None  # what the ``browser`` client does on the page

    def with_headers(self, **headers: str) -> Request:
        return self.replace(headers={**self.headers, **headers})

    def replace(self, **changes: Any) -> Request:
        """A copy with ``changes``: ``dataclasses.replace`` without re-running ``__init__``
        (every unit's request is dressed, most go through providers)."""
        copy = object.__new__(Request)
        object.__setattr__(copy, "__dict__", {**self.__dict__, **changes})
        return copy

    @property
    def full_url(self) -> str:
        """The URL fetched: ``params`` urlencoded after the URL's own query (before any
        fragment), as ``requests`` encodes them and as signers sign them."""
        if not self.params:
            return self.url
        base, hash_, fragment = self.url.partition("#")
        joiner = "" if base.endswith(("?", "&")) else "&" if "?" in base else "?"
        return f"{base}{joiner}{urlencode(self.params)}{hash_}{fragment}"


@dataclass(frozen=True)
class Response:
    """A fully read, size-capped response.

    ``encoding`` is the charset the server declared (None if none); ``text`` decodes
    without trusting it blindly (``external_interface.decode``). ``headers`` is looked up in any
    case: ``response.headers["content-type"]``.
    """

    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    encoding: str | None = None
    elapsed_s: float = 0.0
    from_cache: bool = field(default=False, compare=False)  # replayed by the dev cache
    screenshot: bytes | None = field(default=None, compare=False, repr=False)  # Browse's PNG

    def __post_init__(self) -> None:
        if not isinstance(self.headers, HTTPHeaderDict):
            object.__setattr__(self, "headers", HTTPHeaderDict(dict(self.headers)))

    @property
    def content_type(self) -> str:
        """The media type, lower-case, without parameters ("" when absent)."""
        return (self.headers.get("content-type") or "").split(";")[0].strip().lower()

    @cached_property
    def text(self) -> str:
        return decode_body(self.body, self.headers.get("content-type"),
                           declared=self.encoding).text

    def json(self) -> Any:
        return json.loads(self.body)

    @cached_property
    def selector(self) -> Selector:
        """The body as a parsel ``Selector``: XML for XML media types, else HTML."""
        if any(media_type_matches(self.content_type, t) for t in XML_TYPES):
            return PageSelector(text=self.text, type="xml", base_url=self.url)
        return html_selector(self.text, self.url)  # recovers pages nested past libxml2's depth

    def css(self, query: str) -> SelectorList[Selector]:
        """``response.css("a.next::attr(href)").get()``, as in Scrapy."""
        return self.selector.css(query)

    def xpath(self, query: str, **variables: Any) -> SelectorList[Selector]:
        """``response.xpath("//h1/text()").get()``, as in Scrapy."""
        return self.selector.xpath(query, **variables)

    def html(self) -> HtmlElement:
        """The page as an lxml tree (see ``external_interface.decode.parse_html``)."""
        return parse_html(self.text, base_url=self.url)

    def xml(self) -> XmlElement:
        """The body as an XML tree, entities unexpanded (``decode.parse_xml``)."""
        return parse_xml(self.body, base_url=self.url)

    @cached_property
    def date(self) -> datetime | None:
        """The server's ``Date`` header as an aware datetime (None when absent or bad):
        the clock to read "5 minutes ago" or "yesterday at 14:05" against."""
        raw = self.headers.get("date")
        try:
            return parsedate_to_datetime(raw) if raw else None
        except (TypeError, ValueError, IndexError):
            return None

    def urljoin(self, href: str) -> str | None:
        """``href`` made absolute against this page, as a browser joins it (an empty
        href is the page itself); None for what is not fetchable (``javascript:``,
        ``mailto:``, another scheme, a host or port a browser refuses)."""
        return fetch_url(href, self.url)

    def follow(self, href: str | None, **fields: Any) -> dict[str, Any] | None:
        """A record for the next unit from a link: ``{"url": absolute, **fields}``;
        None when the link is missing or not fetchable."""
        url = self.urljoin(href) if href else None
        return {"url": url, **fields} if url else None

    def next_link(self, **fields: Any) -> dict[str, Any] | None:
        """The page's ``rel="next"`` link (``<link>`` or ``<a>``) as a ``follow`` record:
        the next page of a paged list; None on its last page."""
        return self.follow(self.css("[rel~=next]::attr(href)").get(), **fields)

    def follow_all(self, hrefs: Iterable[str], **fields: Any) -> list[dict[str, Any]]:
        """``follow`` for each link, unfetchable ones dropped, duplicates kept once."""
        records: dict[str, dict[str, Any]] = {}
        for href in hrefs:
            record = self.follow(href, **fields)
            if record is not None:
                records.setdefault(record["url"], record)
        return list(records.values())


def media_type_matches(declared: str, pattern: str) -> bool:
    """Whether media type ``declared`` is one ``pattern`` names: ``text/*``, ``*/*``, and
    ``application/*+json`` for ``application/ld+json`` and ``application/json``."""
    kind, _, sub = declared.partition("/")
    want_kind, _, want_sub = pattern.lower().partition("/")
    if want_kind not in ("*", kind):
        return False
    if want_sub.startswith("*+"):
        return sub == want_sub[2:] or sub.endswith(want_sub[1:])
    return want_sub in ("*", sub)
