"""Resource pools: the one mechanism under proxies, session cookies and device ids.

A pool holds members (an id and a secret value: a proxy URL, a cookie jar, a device
id). ``lease`` hands out the member that has rested longest among those ready
(least recently used, so use spreads over the pool), skipping the ones the caller
must avoid (the exits that banned this unit). ``report`` says how the lease went:

    OK       health +reward (up to 1)
    COOL     rest for ``cooldown_s`` (a 429 on this exit), health unchanged
    FAILED   health -failed, rest (a network error through a proxy)
    BANNED   health -banned, rest (the site refused the exit)
    RETIRE   gone for good (an expired session, a device over its quota)

A member whose health falls to ``Health.floor`` is retired too. Retired ids are
remembered for ``keep_retired_s`` so that a source listing them again does not
bring them back, and their values are dropped at once (no stale secrets).

Two backends pass the same contract (``tests/external_interface/pool``): Redis,
shared by every process and host (the default), and memory, one process only
(scripts, single-process tools). ``pool_factory`` picks one from settings.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal, Protocol, runtime_checkable

Outcome = Literal["ok", "cooling", "retired", "gone"]


class Verdict(StrEnum):
    """How a lease went; see the module docstring for what each does to the member."""

    OK = "ok"
    COOL = "cool"
    FAILED = "failed"
    BANNED = "banned"
    RETIRE = "retire"


@dataclass(frozen=True)
class Health:
    """How reports move a member's health score (new members start at 1)."""

    reward: float = 0.05
    failed: float = 0.1
    banned: float = 0.34  # three bans without successes in between retire a proxy
    floor: float = 0.0

    def delta(self, verdict: Verdict) -> float:
        return {Verdict.OK: self.reward, Verdict.FAILED: -self.failed,
                Verdict.BANNED: -self.banned}.get(verdict, 0.0)


@dataclass(frozen=True)
class Lease:
    """A member handed out: its id, its value, and how many members were ready with it."""

    member: str
    value: str
    ready: int


@dataclass(frozen=True)
class Empty:
    """No member to lease now; ``retry_in_s``: when the next one the caller may use is back
    from its rest, or None when none will be (the pool is empty, or all are avoided)."""

    retry_in_s: float | None


@dataclass(frozen=True)
class PoolStats:
    ready: int
    cooling: int
    retired: int

    @property
    def live(self) -> int:
        return self.ready + self.cooling


@runtime_checkable
class Pool(Protocol):
    """One pool of one kind and scope. Times are epoch seconds; ``now`` is for tests (the
    Redis backend otherwise uses the server's clock, the one every host agrees on).
    Redis backends raise ``redis.RedisError`` when the server is away."""

    def add(self, members: Mapping[str, str], now: float | None = None) -> int:
        """Add members (id -> value); an id already live gets the new value and keeps its
        health and rest, a retired id stays retired. Atomic. Returns how many were new."""
        ...

    def lease(self, avoid: Collection[str] = (), now: float | None = None) -> Lease | Empty:
        """The ready member rested longest, not in ``avoid``; it goes to the back of the
        line. Atomic: two callers never get one member for the same turn."""
        ...

    def report(self, member: str, verdict: Verdict, cooldown_s: float = 0.0,
               now: float | None = None) -> Outcome:
        """Apply a verdict (health, rest, retirement); a rest never shortens a longer one.
        Atomic. Reporting a member retired or unknown does nothing ("gone")."""
        ...

    def stats(self, now: float | None = None) -> PoolStats:
        """Members ready now, resting, and retired (remembered); one consistent snapshot."""
        ...

    def keep_only(self, members: Collection[str]) -> int:
        """Forget every live member not in ``members`` (a source that stopped listing it);
        retired ones stay remembered. Atomic. Returns how many were forgotten."""
        ...


PoolFactory = Callable[[str, str], Pool]  # (kind, scope) -> that pool
