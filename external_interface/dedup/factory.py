"""The dedup store the settings name: the Redis bucket store."""

from __future__ import annotations

from typing import TYPE_CHECKING

from external_interface.dedup import DedupStore

if TYPE_CHECKING:
    import redis


def dedup_from_settings(
    redis_client: redis.Redis, namespace: str, expected_entries: int, stamp_unit_s: int = 3600
) -> DedupStore:
    """The Redis bucket store for ``namespace``, sized once for ``expected_entries``.

    ``stamp_unit_s`` is the time resolution: an hour keeps ages exact for 7.4
    years; a second, for tests with TTLs of seconds, for 18 hours. The first
    call for a namespace fixes its layout in Redis; later calls reuse it
    whatever they pass, so workers never disagree on where a key lives.
    """
    from external_interface.dedup.redis_buckets import RedisBucketStore

    return RedisBucketStore.from_settings(redis_client, namespace, expected_entries, stamp_unit_s)
