"""Cluster-wide politeness: a rate limit and a concurrency cap per site or domain.

Celery's ``rate_limit`` counts per worker process, so ten workers on five hosts
send ten times the rate a site was promised. Here every process asks one Redis
for a slot in the site's *bucket* (a site name or a domain) before each fetch:

    with acquire(limiter, "demo", Politeness(rate_per_s=20, burst=2, max_concurrency=8),
                 max_inline_wait_s=1.0, deadline=unit_deadline, max_wait_s=300):
        response = fetcher.fetch(request)

A grant is given when the bucket's rate, its concurrency cap and its cooldown
all allow it. A short wait is slept in-process; a long one raises ``MustWait``
and the caller re-schedules the unit with that countdown. The split exists for
two reasons: a unit sleeping for seconds holds a worker slot that could serve
another site, and a Celery countdown longer than the Redis broker's visibility
timeout is delivered twice. ``max_wait_s`` caps the countdown below it.

A 429 slows the whole bucket: ``limiter.penalize(bucket, retry_after)`` sets a
cooldown (capped) that every acquire in the cluster honours, and resumes the
bucket at its rate, not with a burst.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol, runtime_checkable

from config import Politeness

WaitReason = Literal["cooldown", "concurrency", "rate"]

DEFAULT_MAX_WAIT_S = 300.0  # a third of the default 900 s visibility timeout


@dataclass(frozen=True)
class Wait:
    """Not now: try again in ``seconds``. ``reason`` is a bounded label for metrics."""

    seconds: float
    reason: WaitReason


@dataclass
class Grant:
    """Leave to send one request now, holding a concurrency lease until released.

    Hold it around the fetch only, not the parse or the save: the lease counts
    requests in flight at the site, and holding it longer starves other workers.
    Releasing twice is harmless; a lease never released (the worker was killed)
    expires after the limiter's lease TTL.
    """

    bucket: str
    lease: str | None = None
    on_release: Callable[[Grant], None] | None = field(default=None, repr=False)
    granted_at: float = field(default_factory=time.monotonic)
    released: bool = False

    def release(self) -> None:
        """Give the concurrency slot back; once."""
        if self.released:
            return
        self.released = True
        if self.on_release is not None:
            self.on_release(self)

    def __enter__(self) -> Grant:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()


class MustWait(Exception):
    """The bucket will not admit a request soon: re-schedule the unit in ``seconds``.

    Not a ``CrawlError``: waiting for a slot is neither a failure nor a retry, so
    it should not spend the unit's retry budget.
    """

    def __init__(self, seconds: float, reason: WaitReason) -> None:
        super().__init__(f"politeness: wait {seconds:.3f}s ({reason})")
        self.seconds = seconds
        self.reason = reason


@runtime_checkable
class Limiter(Protocol):
    """Rate, concurrency and cooldown per bucket, shared by every process and host.

    Bucket names must not contain ``{`` or ``}`` (they become a Redis Cluster
    hash tag). Every method may raise ``redis.RedisError`` when the server is away.
    """

    def try_acquire(self, bucket: str, policy: Politeness,
                    now: float | None = None) -> Grant | Wait:
        """A grant, or how long to wait. Atomic: one script decides, and a refusal
        consumes nothing. ``now`` (epoch seconds) is for tests; by default the
        server's clock is used, the one clock every host agrees on."""
        ...

    def penalize(self, bucket: str, seconds: float | None = None) -> float:
        """Block the bucket for ``seconds`` (a Retry-After; ``None``: the default),
        capped by the limiter's maximum; never shortens a longer cooldown. Atomic.
        Returns the cooldown now in force, in seconds."""
        ...

    def state(self, bucket: str) -> dict[str, Any]:
        """What a monitor shows: the stored policy, an estimate of the current rate,
        cooldown remaining, leases held. A snapshot, not a transaction."""
        ...

    def buckets(self) -> list[str]:
        """Buckets used recently by any process, for a monitor."""
        ...


def acquire(limiter: Limiter, bucket: str, policy: Politeness, max_inline_wait_s: float = 1.0,
            deadline: float | None = None, max_wait_s: float = DEFAULT_MAX_WAIT_S) -> Grant:
    """A grant, sleeping in-process through waits that total at most ``max_inline_wait_s``.

    Raises ``MustWait`` (its seconds capped at ``max_wait_s``) when the next wait
    would pass that budget or ``deadline`` (a ``time.monotonic()`` value, e.g.
    the unit's own deadline less its fetch time). No lease is held while sleeping.
    """
    slept = 0.0
    while True:
        answer = limiter.try_acquire(bucket, policy)
        if isinstance(answer, Grant):
            return answer
        if not _may_sleep(answer.seconds, slept, max_inline_wait_s, deadline):
            raise MustWait(min(answer.seconds, max_wait_s), answer.reason)
        time.sleep(answer.seconds)
        slept += answer.seconds


def _may_sleep(wait: float, slept: float, budget: float, deadline: float | None) -> bool:
    """Whether sleeping ``wait`` more keeps within the inline budget and the deadline."""
    if slept + wait > budget:
        return False
    return deadline is None or time.monotonic() + wait <= deadline
