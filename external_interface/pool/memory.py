"""The pool in one process's memory: the Redis pool's semantics behind a lock.

For scripts and single-process tools; a cluster shares nothing through it, so a ban
one process sees is not honoured by another. The Redis pool is the default.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Collection, Mapping

from external_interface.pool import Empty, Health, Lease, Outcome, PoolStats, Verdict


class MemoryPool:
    """The ``Pool`` contract in a dict: member -> time it may be leased again."""

    def __init__(self, health: Health | None = None, keep_retired_s: float = 86_400.0) -> None:
        self.health = health or Health()
        self.keep_retired_s = keep_retired_s
        self._ready: dict[str, float] = {}
        self._values: dict[str, str] = {}
        self._scores: dict[str, float] = {}
        self._retired: dict[str, float] = {}
        self._lock = threading.Lock()

    def add(self, members: Mapping[str, str], now: float | None = None) -> int:
        added = 0
        with self._lock:
            for member, value in members.items():
                if member in self._retired:
                    continue
                self._values[member] = value
                if member not in self._ready:
                    self._ready[member], self._scores[member] = 0.0, 1.0
                    added += 1
        return added

    def lease(self, avoid: Collection[str] = (), now: float | None = None) -> Lease | Empty:
        at = time.time() if now is None else now
        with self._lock:
            line = sorted((t, m) for m, t in self._ready.items() if m not in avoid)
            ready = [m for t, m in line if t <= at]
            if ready:
                self._ready[ready[0]] = at
                count = sum(1 for t in self._ready.values() if t <= at)
                return Lease(ready[0], self._values[ready[0]], count)
            return Empty(line[0][0] - at if line else None)

    def report(self, member: str, verdict: Verdict, cooldown_s: float = 0.0,
               now: float | None = None) -> Outcome:
        at = time.time() if now is None else now
        with self._lock:
            if member not in self._ready:
                return "gone"
            health = min(1.0, self._scores[member] + self.health.delta(verdict))
            if verdict is Verdict.RETIRE or health <= self.health.floor:
                self._retire(member, at)
                return "retired"
            self._scores[member] = health
            if cooldown_s > 0:
                self._ready[member] = max(self._ready[member], at + cooldown_s)
                return "cooling"
            return "ok"

    def _retire(self, member: str, at: float) -> None:
        for table in (self._ready, self._values, self._scores):
            table.pop(member, None)
        self._retired[member] = at
        for old in [m for m, t in self._retired.items() if t < at - self.keep_retired_s]:
            del self._retired[old]

    def stats(self, now: float | None = None) -> PoolStats:
        at = time.time() if now is None else now
        with self._lock:
            ready = sum(1 for t in self._ready.values() if t <= at)
            return PoolStats(ready, len(self._ready) - ready, len(self._retired))

    def keep_only(self, members: Collection[str]) -> int:
        keep = set(members)
        with self._lock:
            gone = [m for m in self._ready if m not in keep]
            for member in gone:
                for table in (self._ready, self._values, self._scores):
                    table.pop(member, None)
        return len(gone)
