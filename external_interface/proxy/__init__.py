"""Proxies: one pool for the whole cluster, fed by the configured sources.

    proxies = ProxyPool.from_settings(settings.proxy, pools, client)   # None: no source
    lease = proxies.lease(avoid=["10.0.0.7:3128"])    # a Lease, or Empty when none is ready
    proxies.report(lease.member, Verdict.BANNED, cooldown_s=120)

Members are ``host:port`` (what a unit's avoid list and the logs carry); the value
is the full URL, credentials included, which only the fetch sees. The sources are
authoritative: a refresh adds what they list and forgets what they stopped listing.
Each process reads them on its first lease (a restarted cluster never leases the
proxies of its last life), then one process of the cluster every ``refresh_s`` (a
Redis lock decides which); a failed read, or a proxy that could not be reached
(``stale``), brings the next read forward to ``RETRY_READ_S``.

With no source configured there is no pool, and a site that declares ``proxy``
fetches directly: the same code runs on a laptop without proxies.

HTTP(S) and SOCKS5 proxies alike (``http://``, ``https://``, ``socks5://``, ``socks5h://``,
credentials in the URL): every fetch client takes them, and a proxy that cannot be
reached or refuses is banned and rotated out as one that the site refused.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Collection
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from external_interface import keys
from external_interface.clients import PROXY_PORTS
from external_interface.pool import Empty, Lease, Outcome, PoolFactory, PoolStats, Verdict
from external_interface.proxy.sources import (
    FileSource,
    HttpSource,
    ProxySource,
    ProxySourceError,
    Sources,
    StaticSource,
)

if TYPE_CHECKING:
    import redis

    from config import ProxySettings

log = logging.getLogger(__name__)

SCOPE = "*"  # one proxy pool for every site: an exit banned by one site may serve another
RETRY_READ_S = 5.0
CHECK_EVERY_S = 5.0  # how often one process asks whether a refresh is due

__all__ = ["ProxyPool", "ProxySource", "ProxySourceError", "member_of", "source_from_settings"]


def member_of(url: str) -> str:
    """A proxy's id in the pool: ``host:port`` (the scheme's default port when the URL
    names none), never its credentials."""
    parts = urlsplit(url)
    return f"{parts.hostname}:{parts.port or PROXY_PORTS.get(parts.scheme.lower(), 80)}"


class ProxyPool:
    """The cluster's proxies: lease, report, refresh from the source."""

    def __init__(self, pools: PoolFactory, source: ProxySource, refresh_s: float,
                 claim: Callable[[float], bool]) -> None:
        """``claim(seconds)``: True for the one caller that should read the source now, and
        nobody else for ``seconds`` (a Redis ``SET NX EX`` across the cluster)."""
        self.pool = pools("proxy", SCOPE)
        self.source = source
        self.refresh_s = refresh_s
        self._claim = claim
        self._next_check = 0.0
        self._read_once = False
        self._lock = threading.Lock()

    @classmethod
    def from_settings(cls, settings: ProxySettings, pools: PoolFactory,
                      client: redis.Redis | None) -> ProxyPool | None:
        source = source_from_settings(settings)
        if source is None:
            return None
        return cls(pools, source, settings.refresh_s, claimer(client))

    def lease(self, avoid: Collection[str] = ()) -> Lease | Empty:
        """A proxy not in ``avoid``; reads the source first when a refresh is due."""
        self._refresh_if_due()
        leased = self.pool.lease(avoid)
        if isinstance(leased, Empty) and leased.retry_in_s is None:
            self._next_check = 0.0  # an empty pool asks at once whether it may read again
        return leased

    def report(self, member: str, verdict: Verdict, cooldown_s: float = 0.0) -> Outcome:
        return self.pool.report(member, verdict, cooldown_s)

    def stats(self) -> PoolStats:
        return self.pool.stats()

    def refresh(self) -> tuple[int, int]:
        """Read the source: add what it lists, forget what it no longer lists. Returns
        (new, forgotten). Raises ``ProxySourceError`` when the source cannot be read."""
        listed = {member_of(url): url for url in self.source.proxies()}
        return self.pool.add(listed), self.pool.keep_only(listed)

    def stale(self) -> None:
        """A proxy could not be reached: maybe the list moved on; read it again soon."""
        self._claim(-RETRY_READ_S)
        with self._lock:
            self._next_check = min(self._next_check, time.monotonic() + RETRY_READ_S)

    def _refresh_if_due(self) -> None:
        with self._lock:
            if time.monotonic() < self._next_check:
                return
            self._next_check = time.monotonic() + min(CHECK_EVERY_S, self.refresh_s)
            first, self._read_once = not self._read_once, True
        if not (self._claim(self.refresh_s) or first):
            return
        try:
            added, forgotten = self.refresh()
        except ProxySourceError as exc:
            log.warning("proxy source %s: %s", self.source.describe(), exc)
            self._claim(-RETRY_READ_S)
            return
        if added or forgotten:
            log.info("proxy source %s: %d new proxies, %d no longer listed",
                     self.source.describe(), added, forgotten)


def claimer(client: redis.Redis | None) -> Callable[[float], bool]:
    """``claim(seconds)`` on Redis (cluster-wide) or, without a client, in this process.
    A negative ``seconds`` shortens the current claim to that many seconds from now."""
    key = keys.pool("proxy", SCOPE, "refreshed")
    if client is not None:
        def claim(seconds: float) -> bool:
            if seconds < 0:
                client.set(key, 1, px=int(-seconds * 1000))
                return False
            return bool(client.set(key, 1, nx=True, px=max(1, int(seconds * 1000))))
        return claim
    until = [0.0]

    def claim_here(seconds: float) -> bool:
        now = time.monotonic()
        if seconds < 0:
            until[0] = now - seconds
            return False
        if now < until[0]:
            return False
        until[0] = now + seconds
        return True
    return claim_here


def source_from_settings(settings: ProxySettings) -> ProxySource | None:
    """The configured sources as one, or None when none is configured."""
    found: list[ProxySource] = []
    if settings.urls:
        found.append(StaticSource(settings.urls))
    if settings.file:
        found.append(FileSource(Path(settings.file)))
    if settings.endpoint:
        found.append(HttpSource(settings.endpoint))
    if not found:
        return None
    return found[0] if len(found) == 1 else Sources(found)
