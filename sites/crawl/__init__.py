"""The generic crawl: any site, no site code. Pages and their links, sitemaps beside them.

    crawlchain launch crawl --start https://docs.example.org/ --max-depth 3

``crawl.web.page`` stores one record per URL (url as linked, final url, status,
title, meta description, canonical link, outgoing links, fetched_at) and follows
the links it may: on the job's registrable domains, not a binary file, matching an
``--allow`` pattern if any is given and no ``--deny`` pattern. A 404 or 410 page is
a record too (its status says so). ``crawl.web.sitemap`` reads a sitemap (XML, gzip
or text, an index's children one level down each, up to ``sitemap_depth``) and
hands its pages to the page step. robots.txt, politeness and the adaptive throttle
are the runtime's, kept per host (``politeness_per="host"``): a crawl spanning many
hosts is polite to each. ``chains/crawl.py`` builds a launch from the command line.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import cast
from urllib.parse import urlsplit

from pydantic import Field

from chains.api import (
    SITEMAP_TYPES,
    AllowedDomains,
    Input,
    Item,
    Parsed,
    Response,
    Site,
    SiteSettings,
    UnitContext,
    extract_page,
    parse_sitemap,
    registrable_domain,
    step,
)

# Links to these are not pages: a crawler of pages does not fetch them (Scrapy's
# LinkExtractor skips the same kinds by extension; content types refuse the rest).
BINARY = frozenset({"7z", "apk", "avi", "bin", "bmp", "bz2", "css", "deb", "dmg", "doc", "docx",
    "eot", "exe", "flv", "gif", "gz", "ico", "iso", "jar", "jpeg", "jpg", "js", "m4a", "m4v",
    "mkv", "mov", "mp3", "mp4", "mpeg", "mpg", "msi", "odp", "ods", "odt", "ogg", "otf", "pdf",
    "png", "ppt", "pptx", "ps", "psd", "rar", "rpm", "rss", "svg", "swf", "tar", "tgz", "tif",
    "tiff", "ttf", "wav", "webm", "webp", "wma", "wmv", "woff", "woff2", "xls", "xlsx", "xz",
    "zip"})


class CrawlSettings(SiteSettings):
    """A crawl's knobs, fixed per launch (``chains.cluster.launch_crawl`` sets them)."""

    allow_domains: list[str] = Field(
        default_factory=list, description="Registrable domains links are followed into; "
        "empty: the domain of the page the link is on (the launch sets the start URLs' "
        "domains when none are given).")
    allow: list[str] = Field(default_factory=list, description="Regexes: a link is "
                             "followed only if it matches one (empty: every link).")
    deny: list[str] = Field(default_factory=list, description="Regexes: a link matching "
                            "one is never followed (deny wins over allow).")
    sitemap_depth: int = Field(2, ge=0, description="Sitemap indexes followed below a "
                               "start sitemap.")
    sitemap_entries: int = Field(50_000, ge=1, description="Entries read from one "
                                 "sitemap file (the protocol's limit).")


SITE = Site("crawl", settings=CrawlSettings, politeness_per="host")


class CrawlPage(Input):
    url: str


class SitemapFile(Input):
    url: str
    level: int = 0  # 0: named by robots.txt or the launch; +1 per index above it


class PageRecord(Item, collection="pages", key="url"):
    url: str
    final_url: str
    status: int
    title: str | None
    description: str | None
    canonical: str | None
    links: list[str]
    fetched_at: datetime


class Scope:
    """Which links a crawl follows; built once per set of settings."""

    def __init__(self, domains: tuple[str, ...], allow: tuple[str, ...],
                 deny: tuple[str, ...]) -> None:
        self.domains = AllowedDomains(domains)
        self.allow = [re.compile(p) for p in allow]
        self.deny = [re.compile(p) for p in deny]

    def follows(self, url: str) -> bool:
        if not self.domains.allows_url(url):
            return False
        path = url.partition("?")[0]
        name = path.rpartition("/")[2]
        if "." in name and name.rpartition(".")[2].lower() in BINARY:
            return False
        if self.allow and not any(p.search(url) for p in self.allow):
            return False
        return not any(p.search(url) for p in self.deny)


@lru_cache(maxsize=64)
def _scope(domains: tuple[str, ...], allow: tuple[str, ...], deny: tuple[str, ...]) -> Scope:
    return Scope(domains, allow, deny)


def scope_of(settings: CrawlSettings, page_url: str) -> Scope:
    """The links followed from ``page_url``: into the allowed domains, or without any,
    into the page's own registrable domain (its host when it has none)."""
    domains = tuple(settings.allow_domains) or (_domain(page_url),)
    return _scope(domains, tuple(settings.allow), tuple(settings.deny))


def _domain(url: str) -> str:
    host = (urlsplit(url).hostname or "").strip("[]")
    return registrable_domain(host) or host


@step(url="{url}", follows="links", statuses=(404, 410))
def page(page: CrawlPage, response: Response, unit: UnitContext) -> Parsed[PageRecord]:
    found = extract_page(response)
    record = PageRecord(url=page.url, final_url=response.url, status=response.status,
                        title=found.title, description=found.description,
                        canonical=found.canonical,
                        links=sorted({*found.links, *found.nofollow}),
                        fetched_at=datetime.now(UTC))
    scope = scope_of(cast(CrawlSettings, unit.settings), response.url)
    return Parsed([record], follow=[{"url": u} for u in found.links if scope.follows(u)])


@step(url="{url}", accept=SITEMAP_TYPES, follows=("pages", "sitemaps"))
def sitemap(file: SitemapFile, response: Response, unit: UnitContext) -> Parsed[Item]:
    settings = cast(CrawlSettings, unit.settings)
    found = parse_sitemap(response.body, response.url, max_entries=settings.sitemap_entries)
    scope = scope_of(settings, response.url)
    deeper = file.level < settings.sitemap_depth
    return Parsed([], follow={
        "pages": [{"url": e.loc} for e in found.entries if scope.follows(e.loc)],
        "sitemaps": [{"url": s.loc, "level": file.level + 1} for s in found.sitemaps
                     if deeper and scope.domains.allows_url(s.loc)]})
