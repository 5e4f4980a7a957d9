"""robots.txt for a batch's requests, obeyed by default (``Site(robots=False)`` opts out).

The prepare phase asks ``verdicts(batch, urls)`` for the batch's live units, then
``refusal(batch, url, verdict)`` for each. The URLs are checked against their origins'
robots.txt, read once per origin for the whole cluster (``external_interface.robots``:
memory, then Redis, then one fetch, through the development cache when the job uses
it), and looked up once per origin for the batch. A URL the file disallows is refused
for good: the unit ends ``Skipped("robots")``, unfetched. A robots.txt unavailable
for now (a 5xx, a 429, no answer) refuses for a while: the unit waits that long
without spending a retry (``RetryAfter(kind="wait")``), until the file answers or has
failed long enough to allow everything. robots.txt itself is never refused. The
verdict's ``Crawl-delay`` is the batch's politeness ceiling (``pipeline.polite``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from chains.runtime.pipeline import polite

if TYPE_CHECKING:
    from chains.runtime.pipeline.batch import Batch
    from external_interface.robots import RobotsVerdict


@dataclass(frozen=True)
class Refusal:
    """Why robots.txt refuses a URL: for good (``wait_s`` None), or for ``wait_s``."""

    reason: str
    wait_s: float | None = None


def verdicts(batch: Batch, urls: Sequence[str]) -> list[RobotsVerdict | None]:
    """robots.txt's verdict on each URL; None where the site does not obey robots.txt
    or the URL is not http(s) (the fetch refuses it with its own reason)."""
    policy = polite.robots(batch)
    if policy is None:
        return [None] * len(urls)
    return policy.check_all(urls, batch.rt.settings.robots.user_agent)


def refusal(batch: Batch, url: str, verdict: RobotsVerdict | None) -> Refusal | None:
    """None when ``url`` may be fetched under ``verdict`` (its entry of ``verdicts``)."""
    if verdict is None or verdict.allowed or urlsplit(url).path == "/robots.txt":
        return None
    if verdict.retry_in_s is None:
        return Refusal("robots")
    wait = min(max(verdict.retry_in_s, 1.0), batch.rt.settings.politeness.max_wait_s)
    return Refusal(f"robots.txt {verdict.reason}: {verdict.detail}", wait)
