"""What politeness a unit's fetch is under, and what the adaptive throttle learns after.

Per batch, in the prepare phase, once per origin (a batch holds many units of one step
of one site; its URLs share one origin or a few), carried on each unit as its ``Bounds``:

    bucket    the site's name, or ``site:host:port`` for a site declared with
              ``politeness_per="host"`` (the generic crawl): each host gets its own
              slot, throttle and cooldown, whichever site's job reaches it
    ceiling   the strictest of the site's declared ``Politeness`` (``POLITE_SITES``
              overrides it) and robots.txt's ``Crawl-delay`` for the URL's origin (the
              verdict the robots check of the same batch read)

Per unit, before its fetch (the fetch phase):

    policy    the throttle's current policy for the bucket, never above the ceiling;
              the ceiling itself when the throttle is off (``THROTTLE_ENABLED``);
              None (no slot, no round trip) while the throttle's window is open: a
              server that never pushed back costs nothing per request. Asked per unit,
              not per batch: the throttle's copy is refreshed every ``refresh_s``, and
              a batch waiting on its slots can outlast that

After the batch, the throttle hears what its fetches met: an observer of the close
(``chains.runtime.observers.ThrottleFeedback``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from chains.runtime.pipeline.batch import Bounds
from chains.runtime.render import CHOICES, RENDER
from external_interface.clients import DEFAULT_CLIENT
from external_interface.politeness.throttle import crawl_delay_policy, is_open, strictest

if TYPE_CHECKING:
    from chains.runtime.pipeline.batch import Batch, UnitRun
    from config import Politeness
    from external_interface.http_cache import FetchesRaw
    from external_interface.robots.policy import RobotsPolicy


def uses_cache(batch: Batch) -> bool:
    """Whether the job asked for the development cache (``--http-cache``)."""
    return bool(getattr(batch.settings, "http_cache", False))


def client(batch: Batch) -> str:
    """The fetch client of the batch's units (the step's, the job's or the site's)."""
    return batch.site.client_for(batch.step.client, batch.settings)


def renders(batch: Batch, r: UnitRun | None = None) -> bool:
    """Whether the unit's page is rendered in the browser: its client is ``browser``, or
    its step renders on demand (``render="auto"``) and the page needs it."""
    if client(batch) == RENDER or (r is not None and r.render):
        return True
    if batch.step.render != "auto" or r is None:
        return False
    return r.request is not None and CHOICES.get(batch.step.name, r.request.full_url) == RENDER


def fetcher(batch: Batch, r: UnitRun | None = None) -> FetchesRaw:
    """The fetcher of the unit: its client (the browser when ``renders`` says so),
    through the development cache when the job, or the workers, ask for it."""
    return batch.rt.fetcher_for(uses_cache(batch), RENDER if renders(batch, r) else client(batch))


def robots(batch: Batch) -> RobotsPolicy | None:
    """The robots.txt policy the batch obeys, read with the batch's client (a browser
    batch's with ``http``: a text file needs no rendering); None for a site that opted
    out."""
    if not batch.site.robots:
        return None
    reader = client(batch)
    return batch.rt.robots_for(uses_cache(batch), DEFAULT_CLIENT if reader == RENDER else reader)


def bounds(batch: Batch, urls: Sequence[str],
           delays: Sequence[float | None]) -> list[Bounds]:
    """Each URL's ``Bounds``, given its origin's robots.txt ``Crawl-delay``; each
    distinct one is built once (a batch's units share one or a few)."""
    site = batch.site.name
    declared = batch.rt.settings.politeness.sites.get(site) or batch.site.politeness
    built: dict[tuple[str, float | None], Bounds] = {}
    out = []
    for url, delay in zip(urls, delays, strict=True):
        key = (bucket(batch, url), delay)
        found = built.get(key)
        if found is None:
            found = built[key] = Bounds(key[0], strictest(declared, crawl_delay_policy(delay)))
        out.append(found)
    return out


def bucket(batch: Batch, url: str) -> str:
    """The politeness bucket (and throttle key) of a request to ``url``."""
    site = batch.site.name
    if batch.site.politeness_per != "host":
        return site
    host = urlsplit(url).netloc.rpartition("@")[2].lower()
    return f"{site}:{host}" if host else site


def policy(batch: Batch, key: str, cap: Politeness | None) -> Politeness | None:
    """The policy in force for ``key``: the throttle's under ``cap``, or ``cap`` alone;
    None when nothing limits the key (no slot to take)."""
    throttle = batch.rt.throttle
    if throttle is None:
        return cap
    current = throttle.current(key, cap)
    return None if is_open(current, batch.rt.settings.throttle.max_concurrency, cap) else current
