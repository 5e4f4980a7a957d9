"""Pools by kind and scope on the chosen backend: Redis (the cluster) or memory (one process)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from external_interface.pool import Health, Pool, PoolFactory

if TYPE_CHECKING:
    import redis


def pool_factory(backend: str, client: redis.Redis | None, health: Health | None = None,
                 keep_retired_s: float = 86_400.0) -> PoolFactory:
    """Pools by (kind, scope) on the chosen backend: ``redis`` (on ``client``) or ``memory``
    (one process). The same kind and scope give the same object."""
    policy = health or Health()
    if backend not in ("redis", "memory"):
        raise ValueError(f"RESOURCES_BACKEND: unknown pool backend {backend!r} (redis, memory)")
    if backend == "redis" and client is None:
        raise ValueError("the redis pool backend needs a Redis client")
    made: dict[tuple[str, str], Pool] = {}
    lock = threading.Lock()

    def build(kind: str, scope: str) -> Pool:
        if client is not None and backend == "redis":
            from external_interface.pool.redis_pool import RedisPool

            return RedisPool(client, kind, scope, policy, keep_retired_s)
        from external_interface.pool.memory import MemoryPool

        return MemoryPool(policy, keep_retired_s)

    def pool(kind: str, scope: str) -> Pool:
        with lock:
            if (kind, scope) not in made:
                made[(kind, scope)] = build(kind, scope)
            return made[(kind, scope)]
    return pool
