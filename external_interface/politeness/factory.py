"""The limiter on the state plane's Redis."""

from __future__ import annotations

from typing import TYPE_CHECKING

from external_interface.politeness import Limiter
from external_interface.politeness.throttle import Throttle

if TYPE_CHECKING:
    import redis

    from config import ThrottleSettings


def limiter_from_redis(client: redis.Redis, lease_ttl_s: float = 60.0,
                       max_penalty_s: float = 60.0, default_penalty_s: float = 5.0,
                       jitter_s: float = 0.01) -> Limiter:
    """The Redis limiter on ``client`` (the state plane).

    ``lease_ttl_s`` must exceed the longest fetch (a lease outliving no fetch
    would let the cap be exceeded); it is also how long a killed worker's slot
    stays taken. ``max_penalty_s`` caps any cooldown, ``default_penalty_s`` is a
    429's cooldown without a Retry-After. ``jitter_s`` is how late a caller may
    come back without the bucket losing rate (see ``redis_gcra``); 0 is strict.
    """
    from external_interface.politeness.redis_gcra import RedisLimiter

    return RedisLimiter(client, lease_ttl_s=lease_ttl_s, max_penalty_s=max_penalty_s,
                        default_penalty_s=default_penalty_s, jitter_s=jitter_s)


def throttle_from_settings(settings: ThrottleSettings, client: redis.Redis) -> Throttle:
    """The Redis throttle on the state client. There is no in-process backend on
    purpose: a throttle per process is exactly AutoThrottle's flaw, and the
    embedded Redis is the default everywhere else."""
    from external_interface.politeness.redis_throttle import RedisThrottle

    return RedisThrottle(client, settings)
