"""Sitemaps: XML url sets, sitemap indexes, gzip files and plain-text lists, bounded.

    page = parse_sitemap(response.body, response.url)
    page.entries     # [SitemapEntry(loc, lastmod)]: pages, lastmod an aware datetime
    page.sitemaps    # child sitemap URLs (an index); read them as further units

A sitemap step parses one fetched file and fans out its entries (to the page
step, ``lastmod`` to the recrawl policy) and its child sitemaps (to itself, one
level deeper); ``walk_sitemaps`` does the same in one process, for a shell.

Bounds. The fetch caps the body and the decoded bytes of a ``Content-Encoding``;
a ``.gz`` file arrives as opaque data, so it is gunzipped here under its own cap
(``max_decoded_bytes``, the protocol's 50 MiB), which stops a gzip bomb. A file
yields at most ``max_entries`` (50,000, the protocol's limit); a walk stops at
a total, a depth and a number of files. The XML parser (``external_interface.decode.parse_xml``)
expands no entity and loads no DTD nor anything from the network: billion-laughs
and external entities (XXE) come out as empty locations, which are dropped.
"""

from __future__ import annotations

import logging
import re
from collections import deque
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal

from exceptions import CrawlError, ParseError
from external_interface.decode import XmlElement, decode_body, gunzip_capped, parse_xml
from external_interface.http import Response
from utils.urls import fetch_url

log = logging.getLogger(__name__)
MAX_ENTRIES = 50_000  # per file, the sitemap protocol's limit
MAX_DECODED_BYTES = 50 * 1024 * 1024  # per file, uncompressed, the protocol's limit
_YEAR_MONTH = re.compile(r"(\d{4})(?:-(\d{2}))?")


@dataclass(frozen=True)
class SitemapEntry:
    """One page a sitemap lists, its URL absolute and normalised."""

    loc: str
    lastmod: datetime | None = None


@dataclass(frozen=True)
class Sitemap:
    """One parsed file. ``truncated``: entries past the cap were left out."""

    url: str
    kind: Literal["urlset", "index", "text"]
    entries: list[SitemapEntry] = field(default_factory=list)
    sitemaps: list[SitemapEntry] = field(default_factory=list)
    truncated: bool = False


def parse_sitemap(body: bytes, url: str, *, max_entries: int = MAX_ENTRIES,
                  max_decoded_bytes: int = MAX_DECODED_BYTES) -> Sitemap:
    """One sitemap file (XML, gzip or text) as entries and child sitemaps.

    Raises ``ParseError`` for a body that is neither (an HTML page, a broken gzip
    stream) and ``ResponseRejected`` for gzip data expanding past the cap.
    """
    if body[:2] == b"\x1f\x8b":
        body = gunzip_capped(body, max_decoded_bytes)
    if body.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] != b"<":  # a BOM, blanks, then XML
        return _text_sitemap(body, url, max_entries)
    root = parse_xml(body, base_url=url)
    kind = _local(root.tag)
    if kind not in ("urlset", "sitemapindex"):
        raise ParseError(f"not a sitemap: the root element is <{kind}>", url=url)
    found: list[SitemapEntry] = []
    truncated = False
    for child in root.iterchildren():
        if len(found) >= max_entries:
            truncated = True
            break
        entry = _entry(child, url)
        if entry is not None:
            found.append(entry)
    if kind == "sitemapindex":
        return Sitemap(url, "index", sitemaps=found, truncated=truncated)
    return Sitemap(url, "urlset", entries=found, truncated=truncated)


def _entry(element: XmlElement, base: str) -> SitemapEntry | None:
    """``<url>`` or ``<sitemap>``: its ``loc`` (required) and ``lastmod``."""
    loc = lastmod = None
    for part in element.iterchildren():
        name = _local(part.tag)
        if name == "loc":
            loc = part.text
        elif name == "lastmod":
            lastmod = part.text
    if not loc or not loc.strip():
        return None
    absolute = fetch_url(loc.strip(), base)
    return SitemapEntry(absolute, parse_lastmod(lastmod)) if absolute else None


def _local(tag: object) -> str:
    """An element's name without its namespace (``{http://...}url`` -> ``url``);
    comments and processing instructions have none."""
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _text_sitemap(body: bytes, url: str, max_entries: int) -> Sitemap:
    """The protocol's text form: one URL a line, nothing else."""
    lines = decode_body(body).text.splitlines()
    if lines and not any(line.strip().startswith(("http://", "https://")) for line in lines[:5]):
        raise ParseError("not a sitemap: neither XML nor a list of URLs", url=url)
    entries: list[SitemapEntry] = []
    for line in lines:
        if len(entries) >= max_entries:
            return Sitemap(url, "text", entries, truncated=True)
        text = line.strip()
        if text.startswith(("http://", "https://")) and (loc := fetch_url(text, url)):
            entries.append(SitemapEntry(loc))
    return Sitemap(url, "text", entries)


def parse_lastmod(text: str | None) -> datetime | None:
    """A W3C datetime (``2024``, ``2024-05``, ``2024-05-01``, ``2024-05-01T10:00Z``,
    ``2024-05-01T10:00:00.5+02:00``) as an aware datetime; no zone means UTC. None
    when absent or unreadable: a bad lastmod only loses the hint."""
    if not text or not (value := text.strip()):
        return None
    short = _YEAR_MONTH.fullmatch(value)
    try:
        if short:
            return datetime(int(short[1]), int(short[2] or 1), 1, tzinfo=UTC)
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def walk_sitemaps(urls: Iterable[str], fetch: Callable[[str], Response], *,
                  max_depth: int = 2, max_entries: int = 1_000_000, max_files: int = 1_000,
                  max_decoded_bytes: int = MAX_DECODED_BYTES) -> Iterator[SitemapEntry]:
    """Every page of these sitemaps and of the indexes among them, breadth first.

    An index at depth ``max_depth`` is not followed (indexes of indexes are outside
    the protocol, but exist); each file is read once; a file that fails (a status,
    a parse error) is logged and skipped. Stops at ``max_entries`` pages in all or
    ``max_files`` files read.
    """
    queue = deque((url, 0) for url in urls)
    seen = {url for url, _ in queue}
    given = files = 0
    while queue and files < max_files:
        url, depth = queue.popleft()
        files += 1
        try:
            page = _read(url, fetch, max_decoded_bytes)
        except (CrawlError, ValueError) as exc:
            log.warning("sitemap %s skipped: %s", url, exc)
            continue
        for entry in page.entries:
            if given >= max_entries:
                return
            given += 1
            yield entry
        if depth < max_depth:
            for child in page.sitemaps:
                if child.loc not in seen:
                    seen.add(child.loc)
                    queue.append((child.loc, depth + 1))


def _read(url: str, fetch: Callable[[str], Response], max_decoded_bytes: int) -> Sitemap:
    response = fetch(url)
    if not 200 <= response.status < 300:
        raise ParseError(f"sitemap answered {response.status}", url=url)
    return parse_sitemap(response.body, response.url, max_decoded_bytes=max_decoded_bytes)
