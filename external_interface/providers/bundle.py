"""Every provider of a process, built from settings: the pools and lists a request goes
through (``outfit.equip``). Nothing is connected here; the pools open their clients on
first use."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from external_interface.cookie import CookieJar
from external_interface.device_id import DevicePool
from external_interface.pool import Health
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
    def from_settings(cls, settings: Settings, client: redis.Redis) -> Providers:
        res = settings.resources
        shared = client if res.backend == "redis" else None
        pools = pool_factory(res.backend, shared, Health())
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
