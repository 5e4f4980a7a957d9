"""robots.txt for a unit's request, obeyed by default (``Site(robots=False)`` opts out).

The prepare phase asks ``refusal(batch, url)`` for each live unit. The URL is checked
against its origin's robots.txt, read once per origin for the whole cluster
(``external_interface.robots``: memory, then Redis, then one fetch, through the
development cache when the job uses it). A URL the file disallows is refused for
good: the unit ends ``Skipped("robots")``, unfetched. A robots.txt unavailable for
now (a 5xx, a 429, no answer) refuses for a while: the unit waits that long without
spending a retry (``RetryAfter(kind="wait")``), until the file answers or has failed
long enough to allow everything. robots.txt itself is never refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from chains.runtime.pipeline import polite

if TYPE_CHECKING:
    from chains.runtime.pipeline.prepare import Batch


@dataclass(frozen=True)
class Refusal:
    """Why robots.txt refuses a URL: for good (``wait_s`` None), or for ``wait_s``."""

    reason: str
    wait_s: float | None = None


def refusal(batch: Batch, url: str) -> Refusal | None:
    """None when ``url`` may be fetched (or the site does not obey robots.txt)."""
    policy = polite.robots(batch)
    if policy is None or urlsplit(url).path == "/robots.txt":
        return None
    try:
        verdict = policy.check(url, batch.rt.settings.robots.user_agent)
    except ValueError:  # not http(s): the fetch refuses it with its own reason
        return None
    if verdict.allowed:
        return None
    if verdict.retry_in_s is None:
        return Refusal("robots")
    wait = min(max(verdict.retry_in_s, 1.0), batch.rt.settings.politeness.max_wait_s)
    return Refusal(f"robots.txt {verdict.reason}: {verdict.detail}", wait)
