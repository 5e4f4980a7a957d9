"""The adaptive throttle: one controller per site (or host) for the whole cluster.

Scrapy's AutoThrottle adapts per process, so N workers hit a site N times harder
than any one of them thinks. Here every worker on every host reports what it
saw to one controller in Redis and asks it what rate is in force:

    policy = throttle.current(site, ceiling=declared)        # cached; no round trip
    with acquire(limiter, site, policy, ...):                 # the GCRA limiter
        response = fetcher.fetch_raw(request)
    throttle.observe(site, [Observation.of(response)], ceiling=declared)  # batched

The algorithm (the Lua script in ``redis_throttle`` is its only implementation)
--------------------------------------------------------------------------------

Signals, per response. A *rate signal* is a 429, or a 503 with Retry-After (a
server saying "too fast" in the other common way). A plain 5xx is noise unless
its share rises: a fast and a slow moving average of the 5xx share are kept
(over about 20 and 200 responses), and only a fast share above 25 % and above
twice the slow share plus 10 points counts, so a steady 10 % of random 503s
never slows the crawl while a server starting to fail under load does. Both
averages start as plain means of what a key has seen (their weight is 1/n until
n reaches 20 or 200), so a server that fails the same share from its first
answer (every URL's first ask, say) is not taken for one starting to fail.
*Latency* is a fast average of good responses against a baseline that follows
it down at once and up only over about 30 s; a fast average above 3 x the
baseline + 50 ms is a signal too (a queue building up at the server). One answer
moves the average to at most twice itself + 50 ms: one slow path is not a slow host,
latency rising on answer after answer (every path) is.

One URL's trouble is not the host's. An observation names its URL; a URL that
fails (a 429, a 5xx, no answer) while it failed before and has not answered well
since is not news: it counts for nothing here (its own unit's retries, capped, deal
with it), so a path that hangs, loops or errors at every try never cuts the host's
rate. The failing URLs are a small hash beside the state (8 hex digits each).

Start. A new key starts with ``start_concurrency`` (4) requests in flight and
no rate limit (``start_rate``, 8/s, is only what a monitor shows before the
first answer), and ramps like TCP's slow start: the window grows by one per
good response, so it doubles every round trip up to ``max_concurrency`` (by two,
tripling, while every answer is fast, within the latency slack, and clean, no
5xx yet). A key nobody used for ``forget_s`` (120 s) starts afresh: a defence
learnt in one job does not slow the next one. A request in flight for 8 times the
key's latency (at least a second) stops counting toward the window
(``Politeness.stale_after_s``), so a URL that hangs does not hold the host's slots. On
loopback that is milliseconds; on a site 200 ms away it is 20/s, 40/s, 80/s...
a round trip each. A server without defences thus pays nothing but its first
round trips, and no lease or pacing beyond the window. A window grown to
``max_concurrency`` with no sign of trouble is *open* (``is_open``): the window no
longer limits, so the caller takes no slot at all for the key (no round trip per
request: the cluster's fetch threads are the limit) and only reports what it saw,
once per batch; the first signal closes it, as the key leaves slow start.

Decrease (multiplicative), at most once per ``hold_s`` (1 s, or two round trips
if shorter) and never for responses to requests sent before the last decrease,
which would punish one overload many times:
  * on a rate signal the controller estimates what the server grants, its
    *ceiling*: in a storm (over half the recent answers are 429) the bucket is
    empty, so what got through since the last decrease is its rate; otherwise
    the larger of what got through over the last half second or more (a floor)
    and 90 % of what was sent (just above it). The rate goes to 95 % of that,
    and at least 10 % down; leaving slow start it is at most halved, since a
    window doubling every round trip overshoots by up to 2x. The rate then
    climbs back to 97 % of the ceiling within about a second and holds there
    for a *plateau* before probing above it, convexly (+5 %, +20 %, +45 % of the
    ceiling after 1, 2, 3 s), so a ceiling estimated too low is left quickly.
    A ceiling within 15 % of the previous one is confirmed: the plateau doubles
    (from ``plateau_s``, 5 s, up to 60 s), so a fixed limit is probed ever more
    rarely; an unconfirmed one gets a plateau of 1 s;
  * on a 5xx or latency signal the rate goes to 70 % of what was sent.
A Retry-After (on a rate signal) cools the *whole key* down for that long,
capped at ``max_retry_after_s``, written to the limiter's cooldown so every
acquire in the cluster waits, and the first request after it goes at the rate,
not in a burst.

Increase, only while clean (no signal, latency flat, the 5xx share not rising)
and while the rate is what holds the crawl back (the key sends 80 % of it or
more): a crawl sending 30/s under a limit of 1,000/s does not talk it up to
10,000/s. Towards a ceiling as above; without one (after a 5xx or latency
signal) 25 % a second.

After slow start, concurrency is derived: twice the rate times the latency
(Little's law), plus two, between 2 and ``max_concurrency``. A declared
``Politeness`` (the site's, or a robots.txt ``Crawl-delay``) is a hard
ceiling: the controller never goes above its rate or concurrency.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from config import Politeness

if TYPE_CHECKING:

    from external_interface.http import Response


@dataclass(frozen=True)
class Observation:
    """One response as the throttle needs it: how long it took, its status, its
    Retry-After in seconds (None when absent), and when it ended (``time.monotonic()``,
    or the pinned clock of ``observe(now=...)``; None: just now). A network error
    is status 0.

    The end time matters for batches: a response to a request sent before the
    controller's last decrease is old news and must not decrease it again.
    """

    latency_s: float
    status: int
    retry_after_s: float | None = None
    done_at: float | None = None
    url: str = ""  # what was fetched: a URL failing again is not the host's distress

    @classmethod
    def of(cls, response: Response) -> Observation:
        """From a fetched response (its elapsed time, status and Retry-After), now."""
        from external_interface.statuses import parse_retry_after

        return cls(response.elapsed_s, response.status,
                   parse_retry_after(response.headers.get("Retry-After")), time.monotonic(),
                   response.url)

    @classmethod
    def failed(cls, latency_s: float, url: str = "") -> Observation:
        """A fetch that got no response (a network error or a timeout), now."""
        return cls(latency_s, 0, None, time.monotonic(), url)


@dataclass(frozen=True)
class Control:
    """What the controller holds for a key right now."""

    policy: Politeness
    cooldown_s: float  # how long the whole key is blocked by a Retry-After, from now
    phase: str  # "start" (ramping) or "steady"
    ceiling_per_s: float | None  # the accepted rate learned from rate signals


@runtime_checkable
class Throttle(Protocol):
    """Adaptive rate and concurrency per key, shared by every process and host.

    Key names follow the limiter's bucket rules (non-empty, no braces): use the
    limiter's bucket, so a Retry-After cools that bucket down. Every method may
    raise ``redis.RedisError`` when the server is away.
    """

    def current(self, key: str, ceiling: Politeness | None = None) -> Politeness:
        """The policy in force for ``key``, never above ``ceiling``. Served from this
        process's copy when fresh (``refresh_s``), so most calls cost no round trip."""
        ...

    def observe(self, key: str, observations: Sequence[Observation],
                ceiling: Politeness | None = None, now: float | None = None) -> Control:
        """Feed responses to the controller: one atomic script for the whole batch.
        Returns the control now in force (and refreshes this process's copy).
        ``now`` (epoch seconds) pins the clock for simulations; by default the
        server's clock is used."""
        ...

    def state(self, key: str) -> dict[str, Any]:
        """What a monitor shows for a key: rate, concurrency, phase, ceiling, counts,
        latency. A snapshot."""
        ...

    def observed(self) -> list[str]:
        """Keys observed recently by any process, for a monitor."""
        ...


def is_open(policy: Politeness, max_concurrency: int,
            ceiling: Politeness | None = None) -> bool:
    """Whether ``policy`` (from ``Throttle.current``) leaves the key open: slow start, no
    rate, the window at ``max_concurrency`` (``THROTTLE_MAX_CONCURRENCY``), and no
    declared ceiling that caps anything. Such a key needs no slot per request."""
    capped = ceiling is not None and bool(ceiling.rate_per_s or ceiling.max_concurrency)
    return (not capped and policy.rate_per_s is None
            and (policy.max_concurrency or 0) >= max_concurrency)


def strictest(*policies: Politeness | None) -> Politeness | None:
    """The tightest of several policies (the site's, robots' Crawl-delay): the lowest
    rate, the lowest burst, the lowest concurrency. None when none is given."""
    given = [p for p in policies if p is not None]
    if not given:
        return None
    rates = [p.rate_per_s for p in given if p.rate_per_s]
    caps = [p.max_concurrency for p in given if p.max_concurrency]
    return Politeness(rate_per_s=min(rates) if rates else None,
                      burst=min(p.burst for p in given),
                      max_concurrency=min(caps) if caps else None)


def crawl_delay_policy(delay_s: float | None) -> Politeness | None:
    """A robots.txt ``Crawl-delay`` as a ceiling: one request per delay, one at a time.
    None for no delay (or a zero one)."""
    if not delay_s or delay_s <= 0:
        return None
    return Politeness(rate_per_s=1.0 / delay_s, burst=1, max_concurrency=1)
