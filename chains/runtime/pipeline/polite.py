"""What politeness a unit's fetch is under, and what the adaptive throttle learns after.

Per unit, before its fetch (the fetch phase):

    bucket    the site's name, or ``site:host:port`` for a site declared with
              ``politeness_per="host"`` (the generic crawl): each host gets its own
              slot, throttle and cooldown, whichever site's job reaches it
    ceiling   the strictest of the site's declared ``Politeness`` (``POLITE_SITES``
              overrides it) and robots.txt's ``Crawl-delay`` for the URL's origin
    policy    the throttle's current policy for the bucket, never above the ceiling;
              the ceiling itself when the throttle is off (``THROTTLE_ENABLED``);
              None (no slot, no round trip) while the throttle's window is open: a
              server that never pushed back costs nothing per request

After the batch (the close phase), ``observe`` feeds each bucket's responses to the
throttle in one call per bucket: latency, status, Retry-After. A fetch through a
pooled proxy is not fed to the site's throttle: a site limits each exit, and the
proxy's own rest and per-exit bucket handle what it answers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from external_interface.politeness.throttle import (
    Observation,
    crawl_delay_policy,
    is_open,
    strictest,
)

if TYPE_CHECKING:
    from chains.runtime.pipeline.prepare import Batch, UnitRun
    from config import Politeness
    from external_interface.http_cache import FetchesRaw
    from external_interface.robots.policy import RobotsPolicy


def uses_cache(batch: Batch) -> bool:
    """Whether the job asked for the development cache (``--http-cache``)."""
    return bool(getattr(batch.settings, "http_cache", False))


def fetcher(batch: Batch) -> FetchesRaw:
    """The fetcher of the batch's units: the development cache when the job, or the
    workers, ask for it."""
    return batch.rt.fetcher_for(uses_cache(batch))


def robots(batch: Batch) -> RobotsPolicy | None:
    """The robots.txt policy the batch obeys; None for a site that opted out."""
    return batch.rt.robots_for(uses_cache(batch)) if batch.site.robots else None


def bucket(batch: Batch, url: str) -> str:
    """The politeness bucket (and throttle key) of a request to ``url``."""
    site = batch.site.name
    if batch.site.politeness_per != "host":
        return site
    host = urlsplit(url).netloc.rpartition("@")[2].lower()
    return f"{site}:{host}" if host else site


def ceiling(batch: Batch, url: str) -> Politeness | None:
    """The hard limit above any rate: the declared politeness and robots' Crawl-delay."""
    site = batch.site.name
    declared = batch.rt.settings.politeness.sites.get(site) or batch.site.politeness
    return strictest(declared, crawl_delay_policy(crawl_delay(batch, url)))


def crawl_delay(batch: Batch, url: str) -> float | None:
    """robots.txt's ``Crawl-delay`` for ``url`` (read from memory once checked)."""
    policy = robots(batch)
    if policy is None:
        return None
    try:
        return policy.check(url).crawl_delay
    except ValueError:  # not http(s): the fetch refuses it anyway
        return None


def policy(batch: Batch, key: str, cap: Politeness | None) -> Politeness | None:
    """The policy in force for ``key``: the throttle's under ``cap``, or ``cap`` alone;
    None when nothing limits the key (no slot to take)."""
    throttle = batch.rt.throttle
    if throttle is None:
        return cap
    current = throttle.current(key, cap)
    return None if is_open(current, batch.rt.settings.throttle.max_concurrency, cap) else current


def observe(batch: Batch, runs: list[UnitRun]) -> None:
    """Tell the throttle what the batch's fetches met: one call per bucket."""
    throttle = batch.rt.throttle
    if throttle is None:
        return
    seen: dict[str, tuple[str, list[Observation]]] = {}
    for r in runs:
        point = r.fetch
        if point is None or r.request is None or (r.outfit is not None and r.outfit.proxy):
            continue
        key = bucket(batch, r.request.url)
        seen.setdefault(key, (r.request.url, []))[1].append(Observation(
            point.seconds, point.status, point.retry_after_s, point.ended))
    for key, (url, observed) in seen.items():
        throttle.observe(key, observed, ceiling(batch, url))
