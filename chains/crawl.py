"""The generic crawl's chain, and a launch built from a command line's worth of options.

    crawlchain launch crawl --start URL [--start URL ...] [--allow-domain D ...]
        [--max-depth N] [--allow REGEX ...] [--deny REGEX ...] [--max-pages N]
        [--sitemap URL ...] [--no-sitemaps] [--http-cache]

or ``launch_crawl(["https://docs.example.org/"], max_depth=2)`` in a shell. How each
option travels with the job (a launch never changes, every unit sees the same):

    --start          root units of the page step, all at depth 0 (``launch(roots=)``)
    --sitemap        root units of the sitemap step; robots.txt's ``Sitemap:`` lines of
                     every start's origin are added (read at launch through the
                     cluster's robots.txt cache, so the workers do not fetch it again)
    --max-depth      ``Chain.max_depth``: pages more than N links from a start page (or
                     from a sitemap, which is no hop: ``Step.same_depth``) are not spawned
    --allow-domain   ``Chain.allowed_domains`` (every request and redirect hop is checked
                     by the runtime) and the site setting ``allow_domains`` (links off
                     them are not followed at all); default: the start URLs' domains
    --allow, --deny  the site settings ``allow`` and ``deny``, read by the page step
    --max-pages      ``Step.max_units`` of the page step: at most N pages are fetched,
                     counted exactly per unit in Redis (``chains.runtime.quota``); the
                     rest end skipped, so the job finishes cleanly
    --http-cache     the site setting ``http_cache``: the job's pages, sitemaps and
                     robots.txt go through the development cache
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from chains.runtime.launch import launch
from chains.runtime.model import Chain, Link, Step
from chains.runtime.session import current
from utils.domains import registrable_domain
from utils.urls import UnsupportedURL, normalize_url

if TYPE_CHECKING:
    from chains.runtime.context import Runtime
    from chains.runtime.job import Job

DEFAULT_DEPTH = 3

crawl = Chain(
    name="crawl", start="page", max_depth=DEFAULT_DEPTH,
    steps={"page": Step(task="crawl.web.page", batch_size=8),
           "sitemap": Step(task="crawl.web.sitemap", same_depth=True, priority=7)},
    links=[Link(src="page", records="links", dst="page", map={"url": "url"}),
           Link(src="sitemap", records="pages", dst="page", map={"url": "url"}),
           Link(src="sitemap", records="sitemaps", dst="sitemap",
                map={"url": "url", "level": "level"})])


@dataclass(frozen=True)
class CrawlLaunch:
    """What a crawl's launch fixes: the chain, the start unit, further roots, settings."""

    chain: Chain
    start: dict[str, Any]
    roots: dict[str, list[dict[str, Any]]]
    settings: dict[str, Any] = field(default_factory=dict)


def plan_crawl(starts: Sequence[str], allow_domains: Sequence[str] = (),
               max_depth: int = DEFAULT_DEPTH, allow: Sequence[str] = (),
               deny: Sequence[str] = (), max_pages: int | None = None,
               sitemaps: Sequence[str] = (), http_cache: bool = False) -> CrawlLaunch:
    """The launch for these options (no sitemap discovery: see ``launch_crawl``).
    ``ValueError`` names a bad start URL, domain or regex."""
    urls = list(dict.fromkeys(_url(s, "--start") for s in starts))
    if not urls:
        raise ValueError("a crawl needs at least one --start URL")
    if max_depth < 0:
        raise ValueError(f"--max-depth must be 0 or more, not {max_depth}")
    if max_pages is not None and max_pages < 1:
        raise ValueError(f"--max-pages must be 1 or more, not {max_pages}")
    domains = list(dict.fromkeys(allow_domains or [_domain(u) for u in urls]))
    steps = dict(crawl.steps)
    steps["page"] = steps["page"].model_copy(update={"max_units": max_pages})
    chain = Chain.model_validate({**crawl.model_dump(), "max_depth": max_depth,
                                  "allowed_domains": domains,
                                  "steps": {k: v.model_dump() for k, v in steps.items()}})
    settings = {"allow_domains": domains, "allow": list(allow), "deny": list(deny),
                "http_cache": http_cache}
    _check_patterns(allow, "--allow")
    _check_patterns(deny, "--deny")
    maps = [{"url": _url(s, "--sitemap"), "level": 0} for s in dict.fromkeys(sitemaps)]
    return CrawlLaunch(chain, {"url": urls[0]},
                       {"page": [{"url": u} for u in urls[1:]], "sitemap": maps}, settings)


def launch_crawl(starts: Sequence[str], allow_domains: Sequence[str] = (),
                 max_depth: int = DEFAULT_DEPTH, allow: Sequence[str] = (),
                 deny: Sequence[str] = (), max_pages: int | None = None,
                 sitemaps: Sequence[str] = (), read_sitemaps: bool = True,
                 http_cache: bool = False, runtime: Runtime | None = None) -> Job:
    """Launch a generic crawl; with ``read_sitemaps``, the sitemaps robots.txt names for
    each start's origin are crawled too (``sitemaps`` are, whatever it says)."""
    planned = plan_crawl(starts, allow_domains, max_depth, allow, deny, max_pages, sitemaps,
                         http_cache)  # bad options fail here, before any connection
    rt = runtime or current()
    found = list(sitemaps)
    if read_sitemaps:
        robots = rt.robots_for(http_cache)
        origins = {_origin(u["url"]): u["url"] for u in [planned.start, *planned.roots["page"]]}
        for url in origins.values():
            found += robots.sitemaps(url)
    if found != list(sitemaps):
        planned = plan_crawl(starts, allow_domains, max_depth, allow, deny, max_pages, found,
                             http_cache)
    return launch(planned.chain, planned.start, runtime=rt,
                  settings={"crawl": planned.settings}, roots=planned.roots)


def _url(text: str, option: str) -> str:
    try:
        return normalize_url(text.strip())
    except UnsupportedURL as exc:
        raise ValueError(f"{option} {text!r}: {exc}; give an absolute http(s) URL") from None


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _domain(url: str) -> str:
    """A start URL's registrable domain, or its host when it has none (an IP, localhost)."""
    host = (urlsplit(url).hostname or "").strip("[]")
    return registrable_domain(host) or host


def _check_patterns(patterns: Sequence[str], option: str) -> None:
    for pattern in patterns:
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"{option} {pattern!r} is not a regular expression: {exc}") \
                from None
