"""Launching on this host's cluster, from a Python shell or a script: this host's session
(``chains.broker.session``: settings from the environment, messages through Celery).

    >>> from chains.cluster import launch, launch_crawl, job
    >>> from chains.forum import forum
    >>> running = launch(forum, base_url="http://127.0.0.1:8765/forum")
    >>> running.wait(); running.report()
    >>> crawl = launch_crawl(["https://docs.example.org/"], max_depth=2)
    >>> job("0f3c9a...").cancel()

Keywords of ``launch`` that name a field of a site's settings (``base_url=...``) set it
for this job; the others are the start step's params. ``launch_crawl`` is the generic
crawl (``crawlchain launch crawl``): how each option travels with the job is said in
``plan_crawl``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from pydantic import ValidationError

from chains.broker.session import current
from chains.crawl import DEFAULT_DEPTH, crawl
from chains.runtime import launch as launching
from chains.runtime.context import Runtime
from chains.runtime.job import Job
from chains.runtime.model import Chain, Rule
from chains.runtime.preflight import LaunchRefused, WorkerPolicy
from config import get_settings
from utils.domains import registrable_domain
from utils.urls import UnsupportedURL, normalize_url


def launch(chain: Chain, /, *, settings: Mapping[str, Mapping[str, Any]] | None = None,
           runtime: Runtime | None = None, workers: WorkerPolicy | None = None,
           **params: Any) -> Job:
    """Start a job of ``chain`` on this host's cluster; returns its handle at once. A
    mistake (an unknown param, a bad setting, no worker on its queues) raises
    ``LaunchRefused`` before anything is queued; ``workers="warn"`` launches without a
    live worker all the same (``LAUNCH_WORKERS``)."""
    planned = launching.plan(chain, [params], settings=settings,
                             env_file=get_settings().env_file)  # a typo named at once
    return launching.start(planned, runtime or current(), workers)[0]


def job(job_id: str, runtime: Runtime | None = None) -> Job:
    """The handle of a job the ledger knows: ``status()``, ``wait()``, ``cancel()``..."""
    rt = runtime or current()
    if rt.ledger.state(job_id) is None:
        raise KeyError(f"job {job_id} is unknown to the ledger: `crawlchain jobs` lists "
                       "the jobs it knows")
    return Job(job_id, rt.ledger, rt.dispatch)


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
               sitemaps: Sequence[str] = (), http_cache: bool = False,
               rules: Sequence[Rule] = ()) -> CrawlLaunch:
    """The launch for these options (no sitemap discovery: see ``launch_crawl``).
    ``LaunchRefused`` (a ``ValueError``) names a bad start URL, domain or regex.

    --start          root units of the page step, all at depth 0
    --sitemap        root units of the sitemap step
    --max-depth      ``Chain.max_depth``: pages more than N links from a start page (or
                     from a sitemap, which is no hop: ``Step.same_depth``) are not spawned
    --allow-domain   ``Chain.allowed_domains`` (every request and redirect hop is checked
                     by the runtime) and the site setting ``allow_domains`` (links off
                     them are not followed at all); default: the start URLs' domains
    --allow, --deny  the site settings ``allow`` and ``deny``, read by the page step
    --max-pages      ``Step.max_units`` of the page step: at most N pages are fetched,
                     counted exactly per unit in Redis; the rest end skipped
    --http-cache     the site setting ``http_cache``: the job's pages, sitemaps and
                     robots.txt go through the development cache
    --rule           ``Step.rules`` of the page step: a page whose URL matches a rule's
                     pattern is parsed by the rule's step too, its items stored beside
                     the page's record (CrawlSpider's ``Rule(callback=...)``)
    """
    urls = list(dict.fromkeys(_url(s, "--start") for s in starts))
    if not urls:
        raise LaunchRefused("a crawl needs at least one --start URL", "crawl.start")
    if max_depth < 0:
        raise LaunchRefused(f"--max-depth must be 0 or more, not {max_depth}",
                            "crawl.max_depth")
    if max_pages is not None and max_pages < 1:
        raise LaunchRefused(f"--max-pages must be 1 or more, not {max_pages}",
                            "crawl.max_pages")
    firsts: dict[str, str] = {}  # each host's first URL: a million starts, a few hosts
    for u in urls:
        firsts.setdefault(urlsplit(u).netloc, u)
    domains = list(dict.fromkeys(allow_domains or [_domain(u) for u in firsts.values()]))
    steps = dict(crawl.steps)
    steps["page"] = steps["page"].model_copy(update={"max_units": max_pages,
                                                     "rules": list(rules)})
    chain = crawl.model_copy(update={"max_depth": max_depth, "steps": steps})
    try:
        chain = Chain.model_validate({**chain.model_dump(), "allowed_domains": domains})
    except ValidationError as exc:
        raise LaunchRefused(f"--allow-domain: {exc.errors()[0]['msg']}",
                            "crawl.allow_domain") from None
    outside = [u for u in urls if not chain.allows(u)]
    if outside:
        raise LaunchRefused(f"--start {outside[0]} is outside --allow-domain "
                            f"{', '.join(domains)}: nothing would be crawled; add "
                            f"--allow-domain {_domain(outside[0])} or start on an allowed "
                            "domain", "crawl.allow_domain")
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
                 http_cache: bool = False, rules: Sequence[Rule] = (),
                 runtime: Runtime | None = None, workers: WorkerPolicy | None = None) -> Job:
    """Launch a generic crawl; with ``read_sitemaps``, the sitemaps robots.txt names for
    each start's origin are crawled too (``sitemaps`` are, whatever it says)."""
    options = (allow_domains, max_depth, allow, deny, max_pages)
    planned = plan_crawl(starts, *options, sitemaps, http_cache, rules)  # bad options fail
    rt = runtime or current()
    found = list(sitemaps)
    if read_sitemaps:
        robots = rt.robots_for(http_cache)
        origins = {_origin(u["url"]): u["url"] for u in [planned.start, *planned.roots["page"]]}
        for url in origins.values():
            found += robots.sitemaps(url)
    if found != list(sitemaps):
        planned = plan_crawl(starts, *options, found, http_cache, rules)
    return launching.launch(planned.chain, planned.start, rt,
                            settings={"crawl": planned.settings}, roots=planned.roots,
                            workers=workers)


def _url(text: str, option: str) -> str:
    try:
        return normalize_url(text.strip())
    except UnsupportedURL as exc:
        raise LaunchRefused(f"{option} {text!r}: {exc}; give an absolute http(s) URL",
                            f"crawl.{option.strip('-')}") from None


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
            raise LaunchRefused(f"{option} {pattern!r} is not a regular expression: {exc}",
                                f"crawl.{option.strip('-')}") \
                from None
