"""Which live worker consumes which queue: a heartbeat each worker writes into Redis.

Each worker's main process writes its name, its pid and the queues it consumes, with
the time, every ``BEAT_S`` seconds into one hash (``keys.WORKERS``), from the moment it
consumes until it stops (then it removes its entry). An entry older than ``STALE_S``
is a worker gone without a goodbye (killed, its host lost). A launch reads the hash in
one round trip (``preflight.check_workers``); ``crawlchain workers`` lists it and
``./control.sh start worker`` waits on it.

Why not Celery's ``inspect().active_queues()``: a broadcast waits its whole timeout,
since nobody knows how many workers should answer, and a worker whose main process is
busy (a solo pool running a unit, a loaded host) misses the reply window, which would
refuse a launch for a worker that is there. The heartbeat answers in milliseconds
whatever the workers are doing, on Redis and RabbitMQ brokers alike, and the runtime
reads it without Celery. What it costs: a worker killed by SIGKILL still counts as live
for up to ``STALE_S``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass

import redis

from external_interface import keys

BEAT_S = 5.0  # a live worker writes its entry this often
STALE_S = 20.0  # an entry this old is a worker gone
FORGET_S = 3600.0  # a gone worker's entry is removed by the next beat of any worker


@dataclass(frozen=True)
class Seen:
    """One worker as its last heartbeat said: its queues, its pid, when."""

    name: str
    queues: tuple[str, ...]
    pid: int
    at: float


class Roster:
    """The workers' heartbeats in the state Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client

    def beat(self, name: str, queues: Iterable[str], pid: int) -> None:
        """This worker is live and consumes ``queues``; entries long gone are pruned."""
        now = time.time()
        entry = json.dumps({"queues": sorted(queues), "pid": pid, "at": now})
        self.redis.hset(keys.WORKERS, name, entry)
        gone = [s.name for s in self._all() if s.at < now - FORGET_S]
        if gone:
            self.redis.hdel(keys.WORKERS, *gone)

    def leave(self, name: str) -> None:
        """This worker stops consuming."""
        self.redis.hdel(keys.WORKERS, name)

    def live(self) -> dict[str, Seen]:
        """Workers whose last heartbeat is younger than ``STALE_S``, by name."""
        now = time.time()
        return {s.name: s for s in self._all() if s.at >= now - STALE_S}

    def consumers(self) -> dict[str, set[str]]:
        """Queue -> the live workers consuming it."""
        out: dict[str, set[str]] = {}
        for seen in self.live().values():
            for queue in seen.queues:
                out.setdefault(queue, set()).add(seen.name)
        return out

    def _all(self) -> list[Seen]:
        found = []
        for raw_name, raw in self.redis.hgetall(keys.WORKERS).items():
            name = raw_name.decode() if isinstance(raw_name, bytes) else str(raw_name)
            try:
                entry = json.loads(raw)
                found.append(Seen(name, tuple(entry["queues"]), int(entry["pid"]),
                                  float(entry["at"])))
            except (ValueError, KeyError, TypeError):
                continue  # written by another version: not a live worker of this one
        return found
