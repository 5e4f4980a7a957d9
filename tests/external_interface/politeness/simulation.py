"""A deterministic crawl of a simulated server, driven by the real throttle in Redis.

No sleeps and no sockets: a discrete-event loop on a simulated clock. The server
is a token bucket (``rate`` per second, ``capacity`` tokens; 429 + Retry-After
beyond it) with reproducible random 503s; the crawler is ``workers`` threads
taking units from a queue, paced by a model of the GCRA limiter (rate, one
request at a time past the burst, concurrency cap, cooldown) with the policy
the throttle returns, and reporting every response to the throttle with the
simulated time pinned. A unit answered 429 or 503 is retried after ``retry_s``.
"""

from __future__ import annotations

import heapq
import random
import zlib
from collections import deque
from dataclasses import dataclass, field
from typing import cast

from config import Politeness
from external_interface.politeness.throttle import Control, Observation, Throttle

T0 = 1_000_000.0  # the simulated epoch, seconds


@dataclass
class Server:
    rate: float | None = 50.0  # None: no limit
    capacity: float = 50.0
    retry_after_s: float | None = 1.0
    share_503: float = 0.10
    latency_s: float = 0.005
    tokens: float = 0.0
    refilled_at: float = 0.0
    requests: int = 0
    status_429: int = 0
    status_503: int = 0

    def __post_init__(self) -> None:
        self.tokens = self.capacity

    def answer(self, now: float) -> tuple[int, float | None]:
        """Status and Retry-After of a request arriving at ``now``."""
        self.requests += 1
        if self.rate is not None:
            self.tokens = min(self.capacity, self.tokens + (now - self.refilled_at) * self.rate)
            self.refilled_at = now
            if self.tokens < 1:
                self.status_429 += 1
                return 429, self.retry_after_s
            self.tokens -= 1
        if zlib.crc32(f"req-{self.requests}".encode()) % 1000 < self.share_503 * 1000:
            self.status_503 += 1
            return 503, None
        return 200, None


@dataclass
class Result:
    elapsed_s: float
    requests: int
    status_429: int
    status_503: int
    final: Control | None
    rates: list[tuple[float, float | None]] = field(default_factory=list)

    @property
    def floor_s(self) -> float:
        return self.requests / 50.0


def crawl(server: Server, throttle: Throttle | None, key: str, units: int = 1500,
          workers: int = 16, batch: int = 1, retry_s: float = 1.0,
          ceiling: Politeness | None = None) -> Result:
    """Crawl ``units`` pages; the simulated seconds it took and what the server saw."""
    jitter = random.Random(7)
    events: list[tuple[float, int, str, object]] = []
    order = 0

    def at(when: float, kind: str, data: object = None) -> None:
        nonlocal order
        order += 1
        heapq.heappush(events, (when, order, kind, data))

    queue: deque[int] = deque(range(units))
    policy = throttle.current(key, ceiling) if throttle else Politeness()
    tat = cool_until = 0.0
    idle, in_flight, done, now = workers, 0, 0, 0.0
    pending: list[Observation] = []
    final: Control | None = None
    rates: list[tuple[float, float | None]] = []
    at(0.0, "wake")
    while events and done < units:
        now, _, kind, data = heapq.heappop(events)
        if kind == "retry":
            queue.append(data)  # type: ignore[arg-type]
        elif kind == "answer":
            status, retry_after, latency = cast(tuple[int, float | None, float], data)
            idle, in_flight = idle + 1, in_flight - 1
            if status == 200:
                done += 1
            else:
                at(now + retry_s, "retry", 0)
            if throttle is not None:
                pending.append(Observation(latency, status, retry_after, T0 + now))
                if len(pending) >= batch:
                    final = throttle.observe(key, pending, ceiling, now=T0 + now)
                    pending, policy = [], final.policy
                    cool_until = max(cool_until, now + final.cooldown_s)
                    rates.append((now, policy.rate_per_s))
        while idle and queue:
            if now < cool_until:
                at(cool_until, "wake")
                break
            if policy.max_concurrency is not None and in_flight >= policy.max_concurrency:
                break  # an answer wakes the loop
            if policy.rate_per_s:
                interval = 1.0 / policy.rate_per_s
                wait = max(tat, now) - now
                if wait > 1e-9:
                    at(now + wait, "wake")
                    break
                tat = max(tat, now) + interval
            queue.popleft()
            idle, in_flight = idle - 1, in_flight + 1
            status, retry_after = server.answer(now)
            latency = server.latency_s * (0.5 + jitter.random())
            at(now + latency, "answer", (status, retry_after, latency))
    return Result(now, server.requests, server.status_429, server.status_503, final, rates)
