"""Every provider of a process, built from settings: the pools and lists a request goes
through (``leases.apply_providers``). Nothing is connected here; the pools open their clients on
first use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from external_interface.cookie import CookieJar
from external_interface.device_id import DevicePool
from external_interface.pool import Health, PoolStats
from external_interface.pool.factory import pool_factory
from external_interface.providers.declare import SiteProviders
from external_interface.providers.refill import Refills
from external_interface.proxy import ProxyPool
from external_interface.user_agent import UserAgents, choose, user_agents_from_settings

if TYPE_CHECKING:
    import redis

    from config import ProxySettings, ResourceSettings, Settings


@dataclass
class Providers:
    """Every provider of a process, built from settings (no connection opened here)."""

    settings: ResourceSettings
    proxy_settings: ProxySettings
    proxies: ProxyPool | None
    cookies: CookieJar
    devices: DevicePool
    agents: UserAgents
    refills: Refills

    @classmethod
    def from_settings(cls, settings: Settings, client: redis.Redis | None) -> Providers:
        """The providers ``settings`` name; without a client (``crawlchain try`` with the
        cluster stopped) the pools live in this process's memory."""
        res = settings.resources
        backend = res.backend if client is not None else "memory"
        shared = client if backend == "redis" else None
        pools = pool_factory(backend, shared, Health())
        return cls(
            settings=res, proxy_settings=settings.proxy,
            proxies=ProxyPool.from_settings(settings.proxy, pools, shared),
            cookies=CookieJar(pools), devices=DevicePool(pools),
            agents=user_agents_from_settings(res.user_agents, client),
            refills=Refills(shared, res.refill_lock_s),
        )

    def agent(self, declared: SiteProviders, family: str, key: str) -> str:
        """The site's own family (an app's agent) first, else the backend's."""
        own = declared.user_agents.get(family)
        return choose(own, key) if own else self.agents.pick(family, key)

    def is_low(self, kind: str, site: str) -> bool:
        """Whether a pool has ``RESOURCES_REFILL_BELOW`` members ready or fewer (a scheduled
        refill's condition). A proxy pool without a source is never low: it is not used."""
        stats: PoolStats
        if kind == "cookie":
            stats = self.cookies.stats(site)
        elif kind == "device":
            stats = self.devices.stats(site)
        elif kind == "proxy" and self.proxies is not None:
            stats = self.proxies.stats()
        else:
            return False
        return stats.ready <= self.settings.refill_below
