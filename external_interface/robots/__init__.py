"""robots.txt, obeyed by default: fetched once per origin, cached for the cluster.

    robots = robots_from_settings(settings.robots, client, fetch_with(fetcher, headers))
    verdict = robots.check(url)          # RobotsVerdict(allowed, crawl_delay, reason, ...)
    robots.sitemaps(url)                 # the origin's Sitemap: lines

One fetch per origin (scheme, host, port) for the whole cluster: a process asks
its memory first, then the store (Redis: one hash per origin with a TTL, the
raw body compressed), and only then fetches, after claiming the origin so that
other processes wait for its answer instead of fetching too. The fetching is
injected (a ``Callable[[str], Response]``, see ``fetch_with``): this capability
knows nothing of the runtime, and the fetch's own bounds (deadline, decoded
size cap, SSRF guard, redirect cap) apply to robots.txt like any page.

Google's rules (developers.google.com/search/docs/crawling-indexing/robots/
robots_txt, RFC 9309), with our numbers:

- 2xx: parsed by protego. The body is cut at 500 KiB (Google's limit), at the
  last line break before it; the rest is ignored. Garbage parses to "allow".
- 3xx: followed, 5 hops at most (the fetch follows them; a loop or a longer
  chain is a "missing" robots.txt: allow all, as Google treats it like a 404).
- 4xx other than 429: no robots.txt: allow all.
- 5xx, 429 or no answer at all: disallow all, "unavailable", for
  ``error_backoff_s`` (60 s), after which it is fetched again; once it has been
  failing for ``allow_after_s`` (1 min) everything is allowed (it is still
  re-fetched every back-off). A copy parsed before the failure is kept instead
  while it is younger than ``keep_stale_s`` (24 h): a robots.txt that goes away
  for a minute does not stop a crawl that knows its rules.
- A good answer is kept ``cache_ttl_s`` (24 h, Google's cache time).

Why the raw body is stored (zlib-compressed, capped at 500 KiB) rather than a
compact form: protego has no serialised form, and a hand-made one is a second
parser that can disagree with the first. Parsing is once per process and
origin (the memory cache), a few milliseconds for a common file; a robots.txt
compresses about 5-10 times, so even a capped one is small in Redis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:
    from external_interface.http import Response
    from external_interface.http_cache import FetchesRaw

Kind = Literal["parsed", "allow", "disallow"]
Reason = Literal["allowed", "disallowed", "missing", "unavailable", "not-obeyed"]
MAX_BYTES = 500 * 1024  # Google's limit: content past it is ignored


@dataclass(frozen=True)
class RobotsRecord:
    """What one fetch of an origin's robots.txt taught, as stored (times: epoch seconds).

    ``kind``: ``parsed`` (``body`` holds the file, cut at ``MAX_BYTES``), ``allow``
    (none, or unusable, or unavailable for too long) or ``disallow`` (unavailable
    now). ``failing_since``: when the current run of 5xx/network failures began.
    """

    kind: Kind
    status: int
    fetched_at: float
    fresh_until: float
    note: str = ""
    body: bytes = b""
    failing_since: float | None = None


@dataclass(frozen=True)
class RobotsVerdict:
    """May this URL be fetched? ``reason`` is a bounded label (for metrics and a
    unit's "skipped: robots" record), ``detail`` says more for a log line.

    ``crawl_delay``: seconds between requests the file asks for (``Crawl-delay``,
    or ``Request-rate``'s seconds per request), for the site's politeness.
    ``retry_in_s``: set when the refusal is temporary (robots.txt unavailable):
    defer the unit rather than skip it.
    """

    allowed: bool
    crawl_delay: float | None
    reason: Reason
    detail: str = ""
    retry_in_s: float | None = None


@runtime_checkable
class RobotsStore(Protocol):
    """Records per origin, shared by the processes that use the same store."""

    def get(self, origin: str) -> RobotsRecord | None:
        """The stored record, fresh or not (the caller judges), or None."""
        ...

    def put(self, origin: str, record: RobotsRecord, keep_s: float) -> None:
        """Store ``record``, kept ``keep_s`` seconds (past its freshness, for a stale
        copy to fall back on). Replaces the previous one atomically."""
        ...

    def claim(self, origin: str, hold_s: float) -> bool:
        """True for the one caller that should fetch now (held ``hold_s`` at most)."""
        ...

    def release(self, origin: str) -> None:
        """Give a claim back once its record is stored."""
        ...


def fetch_with(fetcher: FetchesRaw, headers: Mapping[str, str] | None = None
               ) -> Callable[[str], Response]:
    """The fetch robots.txt goes through: the crawl's own fetcher (its bounds, its
    SSRF guard, its redirects; the development cache when it is on) with a browser's
    default headers, status unjudged."""
    from external_interface.http import Request

    fixed = dict(headers or {})

    def fetch(url: str) -> Response:
        return fetcher.fetch_raw(Request(url, headers=fixed))

    return fetch
