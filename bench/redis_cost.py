"""What a crawl costs the one Redis a cluster shares: commands, round trips, messages.

Read from the server itself, no MONITOR (which would cost more than it measures):
two snapshots of ``INFO stats``, ``INFO commandstats`` and ``INFO cpu`` around the
crawl window, differenced.

- **commands**: the sum of ``calls`` over ``commandstats``: every command the server
  ran, including those a Lua script runs (``redis.call``) and those a MULTI/EXEC
  transaction queues, so it is the work Redis does, not what clients sent.
- **round trips**: ``total_writes_processed``, the server's reply-write events. Redis
  writes a client's pending replies once per event-loop turn, so a pipeline, a
  transaction or a script is one, a blocking pop is one when it returns (with a message
  or on its timeout), and a request too large for one socket read (which
  ``total_reads_processed`` counts several times) is still one. Only a reply larger
  than the socket buffer (never in a crawl: replies are small) or a pub/sub push
  counts otherwise.
- **broker messages**: ``LPUSH`` + ``RPUSH`` calls. kombu's Redis transport publishes
  with LPUSH on the queue's list (one per priority) and puts back unacked messages with
  LPUSH/RPUSH; the crawl's state plane (ledger, dedup, politeness, metrics) uses no
  lists, except the user-agent pool's refill, which runs only for sites with that
  provider. A countdown message is published like any other.
- **CPU**: the server's ``used_cpu_sys + used_cpu_user`` (main and background
  threads; the benchmark also measures the process from outside, which should agree).

The snapshotting client's own traffic (the INFO calls, a launcher's polls) is not
the crawl's: callers pass what they sent in the window as ``own_commands`` and
``own_round_trips`` and it is taken off.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

MESSAGE_COMMANDS = ("lpush", "rpush")


class InfoClient(Protocol):
    def info(self, section: str) -> dict[str, Any]: ...


@dataclass(frozen=True)
class RedisSnapshot:
    """The server's cumulative counters at one moment."""

    calls: dict[str, int]  # command -> calls (commandstats)
    writes: int  # total_writes_processed: reply-write events
    reads: int  # total_reads_processed: read events (for reference)
    cpu_s: float  # used_cpu_sys + used_cpu_user

    @classmethod
    def take(cls, client: InfoClient) -> RedisSnapshot:
        """Three INFO calls, one round trip and one command each."""
        stats, commands, cpu = client.info("stats"), client.info("commandstats"), \
            client.info("cpu")
        calls = {name.removeprefix("cmdstat_"): int(v["calls"]) for name, v in commands.items()}
        return cls(calls, int(stats["total_writes_processed"]),
                   int(stats["total_reads_processed"]),
                   float(cpu["used_cpu_sys"]) + float(cpu["used_cpu_user"]))


SNAPSHOT_COMMANDS = 3  # INFO x 3 per snapshot; the first snapshot's replies fall inside


@dataclass(frozen=True)
class RedisCost:
    """What one window cost the server, the snapshotting client's share taken off."""

    commands: int
    round_trips: int
    read_events: int
    messages: int
    cpu_s: float
    top: dict[str, int]  # the most-called commands

    @classmethod
    def between(cls, before: RedisSnapshot, after: RedisSnapshot, own_commands: int = 0,
                own_round_trips: int = 0, top: int = 12) -> RedisCost:
        """``own_*``: what the measuring side sent inside the window, besides the
        snapshots' own INFO calls (which are taken off here)."""
        calls = {name: n - before.calls.get(name, 0) for name, n in after.calls.items()}
        calls["info"] = calls.get("info", 0) - SNAPSHOT_COMMANDS
        calls = {name: n for name, n in calls.items() if n > 0}
        ranked = sorted(calls.items(), key=lambda kv: (-kv[1], kv[0]))[:top]
        return cls(
            commands=sum(calls.values()) - own_commands,
            round_trips=after.writes - before.writes - SNAPSHOT_COMMANDS - own_round_trips,
            read_events=after.reads - before.reads - SNAPSHOT_COMMANDS - own_round_trips,
            messages=sum(calls.get(c, 0) for c in MESSAGE_COMMANDS),
            cpu_s=after.cpu_s - before.cpu_s, top=dict(ranked))

    def figures(self, units: int, items: int) -> dict[str, Any]:
        """Per unit (a finished unit: one request) and per stored item."""
        def per(n: float, d: int, scale: float = 1.0) -> float | None:
            return round(n * scale / d, 3) if d else None
        return {
            "redis_commands_per_unit": per(self.commands, units),
            "redis_round_trips_per_unit": per(self.round_trips, units),
            "redis_cpu_ms_per_1000_units": per(self.cpu_s, units, 1e6),
            "broker_messages_per_unit": per(self.messages, units),
            "redis_commands_per_item": per(self.commands, items),
            "redis_round_trips_per_item": per(self.round_trips, items),
            "redis_cpu_ms_per_1000_items": per(self.cpu_s, items, 1e6),
            "redis_read_events_per_unit": per(self.read_events, units),
            "redis_units_per_core_s": per(units, 1, 1 / self.cpu_s) if self.cpu_s else None,
            "redis_top_commands_per_unit": {k: per(v, units) for k, v in self.top.items()},
        }
