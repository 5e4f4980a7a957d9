"""Refilling cookie and device pools with chains, and feeding what those chains produce.

When a unit finds its site's session or device pool empty (or nearly), the task
asks ``Refills.claim``: the one caller that wins the pool's refill lock gets the
launch params of ``Refill.size`` jobs of the site's refill chain (a login: captcha
-> solve -> login; a device registration), and launches them; everyone else just
waits (the unit is deferred). The lock expires after ``lock_s`` in case a refill
job dies, and is released as soon as a refill delivers (``release``).

Each launch carries ``turn`` (which account logs in: ``turn`` modulo the site's
accounts) and ``requested_by`` (the job and step that ran dry): the runtime credits
that job with what the refill job spent (requests, bans, rotations, captchas) and the
sessions it delivered, so the crawl's own summary says what its sessions cost
(``cookie_refreshes``, ``captcha_solves``).
"""

from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Any

from pydantic import Field

from external_interface import keys
from external_interface.storage import Item

if TYPE_CHECKING:
    import redis

    from external_interface.providers.declare import Refill


class SessionItem(Item):
    """A login's session: into the cookie pool; stored without its cookies (no secrets in
    the item store), one record per account (its last login)."""

    collection = "sessions"
    key_fields = ("account",)

    account: str
    cookies: dict[str, str] = Field(exclude=True, repr=False)


class DeviceItem(Item):
    """A registered device id: into the device pool, and stored."""

    collection = "devices"
    key_fields = ("device_id",)

    device_id: str


class Refills:
    """One refill in flight per pool, cluster-wide (in this process without Redis)."""

    def __init__(self, client: redis.Redis | None, lock_s: float) -> None:
        self.client = client
        self.lock_s = lock_s
        self._local: dict[str, float] = {}
        self._turns: dict[str, int] = {}
        self._mutex = threading.Lock()

    def claim(self, kind: str, site: str, refill: Refill,
              requested_by: dict[str, str] | None) -> list[dict[str, Any]]:
        """Launch params for ``refill.size`` jobs if this caller won the lock, else []."""
        if not self._lock(kind, site):
            return []
        last = self._turn(kind, site, refill.size)
        return [{"turn": turn, "requested_by": requested_by}
                for turn in range(last - refill.size, last)]

    def release(self, kind: str, site: str) -> None:
        """A refill delivered: the next shortage may launch another at once."""
        if self.client is not None:
            self.client.delete(keys.pool(kind, site, "refill"))
        else:
            with self._mutex:
                self._local.pop(keys.pool(kind, site, "refill"), None)

    def _lock(self, kind: str, site: str) -> bool:
        key = keys.pool(kind, site, "refill")
        if self.client is not None:
            return bool(self.client.set(key, 1, nx=True, px=int(self.lock_s * 1000)))
        with self._mutex:
            if self._local.get(key, 0.0) > time.monotonic():
                return False
            self._local[key] = time.monotonic() + self.lock_s
            return True

    def _turn(self, kind: str, site: str, n: int) -> int:
        key = keys.pool(kind, site, "turn")
        if self.client is not None:
            return int(self.client.incrby(key, n))
        with self._mutex:
            self._turns[key] = self._turns.get(key, 0) + n
            return self._turns[key]
