"""robots.txt records in Redis: one hash per origin with a TTL, the body zlib-compressed."""

from __future__ import annotations

import zlib
from typing import cast

import redis
from redis.typing import EncodableT, FieldT

from external_interface import keys
from external_interface.robots import RobotsRecord

_FIELDS = ("kind", "status", "fetched_at", "fresh_until", "note", "failing_since")


class RedisRobotsStore:
    """The cluster's robots.txt cache. A claim is a ``SET NX PX`` beside the record."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def get(self, origin: str) -> RobotsRecord | None:
        raw = cast(dict[bytes, bytes], self.client.hgetall(keys.robots(origin)))
        if not raw:
            return None
        text = {name: raw.get(name.encode(), b"").decode() for name in _FIELDS}
        try:
            body = zlib.decompress(raw.get(b"body", b"")) if raw.get(b"body") else b""
            return RobotsRecord(
                kind=text["kind"],  # type: ignore[arg-type]
                status=int(text["status"]), fetched_at=float(text["fetched_at"]),
                fresh_until=float(text["fresh_until"]), note=text["note"], body=body,
                failing_since=float(text["failing_since"]) if text["failing_since"] else None)
        except (ValueError, zlib.error):  # written by another version: fetch it again
            return None

    def put(self, origin: str, record: RobotsRecord, keep_s: float) -> None:
        mapping: dict[FieldT, EncodableT] = {
            "kind": record.kind, "status": record.status, "fetched_at": record.fetched_at,
            "fresh_until": record.fresh_until, "note": record.note,
            "failing_since": "" if record.failing_since is None else record.failing_since,
            "body": zlib.compress(record.body, 6) if record.body else b"",
        }
        pipe = self.client.pipeline(transaction=True)
        pipe.delete(keys.robots(origin))
        pipe.hset(keys.robots(origin), mapping=mapping)
        pipe.pexpire(keys.robots(origin), max(1, round(keep_s * 1000)))
        pipe.execute()

    def claim(self, origin: str, hold_s: float) -> bool:
        return bool(self.client.set(keys.robots_claim(origin), b"1", nx=True,
                                    px=max(1, round(hold_s * 1000))))

    def release(self, origin: str) -> None:
        self.client.delete(keys.robots_claim(origin))
