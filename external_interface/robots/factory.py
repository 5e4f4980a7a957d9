"""The robots policy the settings name, over the cluster's Redis or one process's memory."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from external_interface.robots import RobotsStore
from external_interface.robots.memory import MemoryRobotsStore
from external_interface.robots.policy import RobotsPolicy
from external_interface.robots.redis_store import RedisRobotsStore

if TYPE_CHECKING:
    import redis

    from config import RobotsSettings
    from external_interface.http import Response

def robots_from_settings(settings: RobotsSettings, client: redis.Redis | None,
                         fetch: Callable[[str], Response]) -> RobotsPolicy:
    """The policy over the Redis store (the cluster's), or over memory without a client
    (one process: scripts, a shell)."""
    store: RobotsStore = MemoryRobotsStore() if client is None else RedisRobotsStore(client)
    return RobotsPolicy(store, fetch, settings)
