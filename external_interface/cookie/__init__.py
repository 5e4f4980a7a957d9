"""Session cookies: one pool per site, sessions keyed by the account that logged in.

    jar = CookieJar(pools)
    jar.add("demo", "reader1", {"sid": "..."})     # what a login chain's last step does
    lease = jar.lease("demo")                       # a SessionLease, or Empty
    jar.invalidate("demo", lease.member)            # 401 / expired: never handed out again

Sessions come from a chain (captcha -> solve -> login -> this pool) that the task
launches when a site's pool runs low (``providers.refill``), or that a schedule
launches (``Schedule(..., when_low="cookie:demo")``). Leases spread use over the
sessions (least recently used first); the site decides when one is spent.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Collection, Mapping
from dataclasses import dataclass

from external_interface.pool import Empty, PoolFactory, PoolStats, Verdict

KIND = "cookie"


@dataclass(frozen=True)
class SessionLease:
    """A session handed out: its pool id, its account and its cookies."""

    member: str
    account: str
    cookies: dict[str, str]
    ready: int


class CookieJar:
    """Session pools per site on one pool backend (Redis: shared by the cluster)."""

    def __init__(self, pools: PoolFactory) -> None:
        self._pools = pools

    def add(self, site: str, account: str, cookies: Mapping[str, str]) -> str:
        """Add a fresh session of ``account``; returns its id (``account|token``). Atomic."""
        member = f"{account}|{secrets.token_hex(6)}"
        self._pools(KIND, site).add({member: json.dumps(dict(cookies))})
        return member

    def lease(self, site: str, avoid: Collection[str] = ()) -> SessionLease | Empty:
        """The session rested longest, or ``Empty`` (then a refill is due). Atomic."""
        leased = self._pools(KIND, site).lease(avoid)
        if isinstance(leased, Empty):
            return leased
        account = leased.member.split("|", 1)[0]
        return SessionLease(leased.member, account, dict(json.loads(leased.value)), leased.ready)

    def invalidate(self, site: str, member: str) -> None:
        """The site refused the session (401, expired): it is never handed out again."""
        self._pools(KIND, site).report(member, Verdict.RETIRE)

    def stats(self, site: str) -> PoolStats:
        return self._pools(KIND, site).stats()
