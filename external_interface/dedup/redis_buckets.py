"""The dedup store in Redis hashes small enough to stay in the compact encoding.

Layout. A key (any fingerprint) is hashed to 64 bits and split, low bits first,
into a bucket (one Redis hash named by ``keys.dedup_bucket``), a sub-bucket (a small
integer field of that hash) and a 24-bit residual. The field's value is a string
of 6-byte records, one per key::

    residual (3 bytes) | time stamp (2 bytes) | content hash (1 byte)

Why records packed in a field, not one field per key: a listpack/ziplist entry
costs 2 bytes of header, so a field-and-value pair per key spends 4 bytes on
headers before any data, and the residual alone needs 3 bytes (below). Packing
about four records per field spends those 4-5 bytes once per four keys: about
7.5 bytes per key in all, against 10 or more for a pair per key.

Widths and what they cost.

- Residual, 24 bits. A never-marked key is reported seen only if its sub-bucket
  holds a record with its residual: probability ``n / 2**24`` for ``n`` records
  there. Sizing aims at ``n = 4`` (2.4e-7) and a sub-bucket never holds more
  than ``capacity`` (10 by default): at most 6.0e-7 at any fill, so the bound
  stays under 1e-6 even past the sized entry count. The same birthday bound
  merges two marked keys: at ``E`` entries about ``E * 4 / 2**25`` pairs, ~1.2
  per 10 million, each a key that shares the other's time and hash.
- Stamp, 16 bits of whole ``stamp_unit_s`` (an hour unless the namespace chose
  otherwise), modulo 2**16 and read relative to now. Ages are exact up to the
  horizon of 65,536 units: 7.4 years in hours, 45 days in minutes, 18 hours in
  seconds (for tests with short TTLs). An older entry reads as younger, so it
  is recrawled up to one TTL late; keep TTLs well inside the horizon.
  ``last_seen`` is rounded down, so a TTL check errs by at most one unit
  towards fetching again.
- Content hash, 8 bits: a changed page looks unchanged with probability 1/256.
  The next change of that page is caught with the same odds again.
- No first-seen time: two more bytes would make records 8 bytes, ~9.5 per key.

Bucket 0 also holds a ``layout`` field: the first store of a namespace pins its
bucket counts there, so every worker finds keys where the others put them.

A full sub-bucket (capacity records) replaces its oldest record: that key is
forgotten and crawled again, never reported seen by mistake. With Poisson
loads of 4, 0.1% of keys are forgotten at the sized count.

The hash's field count and value size stay within the server's
``hash-max-listpack-*`` (``hash-max-ziplist-*`` before Redis 7) limits, read
with CONFIG GET, so no bucket ever converts to the 10x larger hashtable encoding.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import redis
from redis.commands.core import Script

from external_interface.dedup import Seen
from external_interface.keys import dedup_bucket

T = TypeVar("T")

RECORD_BYTES = 6
HOUR = 3600
STAMP_MASK = 0xFFFF
HASH_MASK = 0xFF
RESIDUAL_MASK = 0xFFFFFF
MAX_SUBS = 127  # Redis's default 128 fields less the layout's; longer lists scan slower
MAX_CAPACITY = 16  # records per sub-bucket; keeps the bound under 16 / 2**24 < 1e-6
TARGET_FILL = 0.4  # sized load: 4 records in a 10-record sub-bucket
LAYOUT_FIELD = "layout"  # a field of bucket 0 that pins the layout for every worker
BATCH = 1_000  # keys per script call: about 1-4 ms of server time
PIPELINE_DEPTH = 20  # script calls per round trip

# Both scripts take the batch's bucket keys as KEYS and one packed ARGV of
# probes, each ``bucket index (2 bytes) | sub-bucket (1) | residual (3)``: one
# call and one reply per batch instead of a command per key. ``find`` returns
# where a residual's record starts in a sub-bucket's value, on a record boundary;
# ``bucket`` the key a probe names, ``field`` its sub-bucket's field name (as a
# string: Redis formats a number argument with a slow printf on every call).
_HELPERS_LUA = r"""
local fields = {}
for i = 0, 255 do fields[i] = tostring(i) end
local function field(blob, p) return fields[string.byte(blob, p + 2)] end
local function find(v, resid)
  local at = string.find(v, resid, 1, true)
  while at and (at - 1) % 6 ~= 0 do at = string.find(v, resid, at + 1, true) end
  return at
end
local function bucket(blob, p)
  return KEYS[string.byte(blob, p) * 256 + string.byte(blob, p + 1) + 1]
end
"""

# Reply: 4 bytes per probe, ``\0`` + 3 zero bytes if absent, else ``\1`` + the
# record's stamp and content hash.
_SEEN_LUA = r"""
local blob, out = ARGV[1], {}
for p = 1, #blob, 6 do
  local v = redis.call('HGET', bucket(blob, p), field(blob, p)) or ''
  local at = find(v, string.sub(blob, p + 3, p + 5))
  out[#out + 1] = at and ('\1' .. string.sub(v, at + 3, at + 5)) or '\0\0\0\0'
end
return table.concat(out)
"""

# ARGV[1]: sub-bucket capacity in bytes. Probes carry 3 more bytes, the new
# record's stamp and hash. A record with the same residual is overwritten in
# place; else the record is appended, or replaces the oldest one (largest age
# modulo 2**16 hours) when the sub-bucket is full. Read-then-write: a script.
_MARK_LUA = r"""
local function oldest(v, now)
  local where, age = 1, -1
  for at = 1, #v, 6 do
    local a = (now - string.byte(v, at + 3) * 256 - string.byte(v, at + 4)) % 65536
    if a > age then where, age = at, a end
  end
  return where
end
local cap, blob = tonumber(ARGV[1]), ARGV[2]
for p = 1, #blob, 9 do
  local key, sub, rec = bucket(blob, p), field(blob, p), string.sub(blob, p + 3, p + 8)
  local v = redis.call('HGET', key, sub) or ''
  local at = find(v, string.sub(rec, 1, 3))
  if not at then
    at = #v < cap and #v + 1 or oldest(v, string.byte(rec, 4) * 256 + string.byte(rec, 5))
  end
  redis.call('HSET', key, sub, string.sub(v, 1, at - 1) .. rec .. string.sub(v, at + 6))
end
return 0
"""


@dataclass(frozen=True)
class BucketLayout:
    """How many buckets, sub-buckets per bucket, and records per sub-bucket."""

    buckets: int
    subs: int
    capacity: int
    stamp_unit_s: int = HOUR

    @classmethod
    def sized(
        cls,
        expected_entries: int,
        max_entries: int = 128,
        max_value: int = 64,
        stamp_unit_s: int = HOUR,
    ) -> BucketLayout:
        """The layout that holds ``expected_entries`` at the target fill within the limits.

        One field of bucket 0 is the layout itself, hence ``max_entries - 1`` subs.
        """
        subs = min(MAX_SUBS, max_entries - 1)
        capacity = min(MAX_CAPACITY, max_value // RECORD_BYTES)
        if subs < 1 or capacity < 1:
            raise ValueError(f"hash limits {max_entries}/{max_value} leave no room for records")
        buckets = math.ceil(max(expected_entries, 1) / (subs * capacity * TARGET_FILL))
        return cls(buckets, subs, capacity, stamp_unit_s)

    def fits(self, max_entries: int, max_value: int) -> bool:
        """Whether every bucket stays compact under these server limits."""
        return self.subs < max_entries and self.capacity * RECORD_BYTES <= max_value

    def encode(self) -> str:
        """The pinned form, stored in bucket 0."""
        return f"v1:{self.buckets}:{self.subs}:{self.capacity}:{self.stamp_unit_s}"

    @classmethod
    def decode(cls, raw: bytes) -> BucketLayout:
        """Inverse of ``encode``."""
        _, *numbers = raw.decode().split(":")
        return cls(*(int(number) for number in numbers))

    @property
    def horizon_s(self) -> int:
        """Ages up to this are read exactly; recrawl TTLs should stay well under it."""
        return (STAMP_MASK + 1) * self.stamp_unit_s


def server_hash_limits(client: redis.Redis) -> tuple[int, int]:
    """The server's (max fields, max value bytes) for compact hashes.

    Redis 7 names them ``listpack``, 6 ``ziplist``. Managed services often
    disable CONFIG; Redis's defaults (128, 64) are then assumed.
    """
    return _config_int(client, "entries", 128), _config_int(client, "value", 64)


def _config_int(client: redis.Redis, part: str, default: int) -> int:
    """One ``hash-max-*-<part>`` setting, under either name, or ``default``."""
    for encoding in ("listpack", "ziplist"):
        try:
            answer = client.config_get(f"hash-max-{encoding}-{part}")
        except redis.ResponseError:
            return default
        for value in answer.values():
            if value is not None:
                return int(value)
    return default


class RedisBucketStore:
    """``DedupStore`` in bucketed Redis hashes at about 7.5 bytes per key.

    Each batch of up to ``BATCH`` keys is one Lua call over all the buckets it
    touches, so a batch is atomic as a whole; calls are pipelined. A script
    call per batch, not a command per key, is what makes checks faster than a
    plain SET's pipelined SISMEMBER. That needs one server: on Redis Cluster
    the bucket keys spread over slots (one hash tag per bucket), and a batch
    would have to be split by slot first. The client must return bytes
    (``decode_responses=False``).
    """

    def __init__(self, client: redis.Redis, namespace: str, layout: BucketLayout) -> None:
        if client.get_connection_kwargs().get("decode_responses"):
            raise ValueError("RedisBucketStore needs a client with decode_responses=False")
        self.client = client
        self.namespace = namespace
        self.layout = layout
        self._seen_script = client.register_script(_HELPERS_LUA + _SEEN_LUA)
        self._mark_script = client.register_script(_HELPERS_LUA + _MARK_LUA)

    @classmethod
    def from_settings(
        cls,
        client: redis.Redis,
        namespace: str,
        expected_entries: int,
        stamp_unit_s: int = HOUR,
    ) -> RedisBucketStore:
        """Size for ``expected_entries`` unless the namespace already has a layout.

        ``stamp_unit_s`` is the time resolution (see the module docstring);
        like the sizes, the namespace's first store fixes it.
        """
        max_entries, max_value = server_hash_limits(client)
        wanted = BucketLayout.sized(expected_entries, max_entries, max_value, stamp_unit_s)
        pin = dedup_bucket(namespace, 0)
        client.hsetnx(pin, LAYOUT_FIELD, wanted.encode())
        raw = client.hget(pin, LAYOUT_FIELD)
        layout = BucketLayout.decode(raw) if isinstance(raw, bytes) else wanted
        if not layout.fits(max_entries, max_value):
            raise ValueError(f"dedup layout {layout} of {namespace!r} exceeds this server's limits")
        return cls(client, namespace, layout)

    def seen(self, key: bytes) -> Seen | None:
        """One script call for one key."""
        return self.seen_many([key])[0]

    def seen_many(self, keys: Sequence[bytes]) -> list[Seen | None]:
        """One script call per ``BATCH`` keys, pipelined; answers in the keys' order."""
        unit = self.layout.stamp_unit_s
        now = int(time.time()) // unit
        found: list[Seen | None] = []
        for reply in self._run(self._seen_script, self._seen_calls(keys)):
            found.extend(_decode(reply[at : at + 4], now, unit) for at in range(0, len(reply), 4))
        return found

    def _seen_calls(self, keys: Sequence[bytes]) -> Iterator[tuple[list[bytes], list[Any]]]:
        """The seen script's (KEYS, ARGV) per batch of keys."""
        for start in range(0, len(keys), BATCH):
            bucket_keys, probes = self._probes(keys[start : start + BATCH], [])
            yield bucket_keys, [b"".join(probes)]

    def mark(self, key: bytes, content_hash: int, when: int | None = None) -> None:
        """One script call: insert or overwrite the key's record."""
        self.mark_many([(key, content_hash)], when)

    def mark_many(self, entries: Iterable[tuple[bytes, int]], when: int | None = None) -> None:
        """One script call per ``BATCH`` entries, pipelined; each call is atomic."""
        when = int(time.time()) if when is None else when
        stamp = (when // self.layout.stamp_unit_s) & STAMP_MASK
        capacity = self.layout.capacity * RECORD_BYTES
        self._run(self._mark_script, self._mark_calls(entries, stamp, capacity))

    def _mark_calls(
        self, entries: Iterable[tuple[bytes, int]], stamp: int, capacity: int
    ) -> Iterator[tuple[list[bytes], list[Any]]]:
        """The mark script's (KEYS, ARGV) per batch of entries."""
        for batch in _batches(entries, BATCH):
            tails = [stamp << 8 | (content & HASH_MASK) for _, content in batch]
            bucket_keys, probes = self._probes([key for key, _ in batch], tails)
            yield bucket_keys, [capacity, b"".join(probes)]

    def _run(self, script: Script, calls: Iterable[tuple[list[bytes], list[Any]]]) -> list[Any]:
        """Script calls, ``PIPELINE_DEPTH`` per round trip.

        A lone call goes direct: redis-py's pipelines spend a SCRIPT EXISTS round trip.
        """
        replies: list[Any] = []
        for group in _batches(calls, PIPELINE_DEPTH):
            if len(group) == 1:
                replies.append(script(keys=group[0][0], args=group[0][1]))
                continue
            pipe = self.client.pipeline(transaction=False)
            for bucket_keys, args in group:
                script(keys=bucket_keys, args=args, client=pipe)
            replies.extend(pipe.execute())
        return replies

    def changed(self, key: bytes, content_hash: int) -> bool:
        """Compares the stored 8 bits; a new key counts as changed."""
        seen = self.seen(key)
        return seen is None or seen.content_hash != content_hash & HASH_MASK

    def _probes(self, batch: Sequence[bytes], tails: list[int]) -> tuple[list[bytes], list[bytes]]:
        """The batch's bucket keys and one packed probe per key (with its tail, if any)."""
        index: dict[int, int] = {}
        probes = []
        for key in batch:
            bucket, sub, residual = self._locate(key)
            probe = index.setdefault(bucket, len(index)) << 32 | sub << 24 | residual
            probes.append(probe.to_bytes(6, "big"))
        if tails:
            probes = [p + t.to_bytes(3, "big") for p, t in zip(probes, tails, strict=True)]
        return [dedup_bucket(self.namespace, bucket).encode() for bucket in index], probes

    def _locate(self, key: bytes) -> tuple[int, int, int]:
        """(bucket, sub-bucket, residual) from 64 bits of BLAKE2b of the key."""
        bits = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")
        bits, bucket = divmod(bits, self.layout.buckets)
        bits, sub = divmod(bits, self.layout.subs)
        return bucket, sub, bits & RESIDUAL_MASK


def _batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Consecutive lists of ``size`` items (``itertools.batched`` is Python 3.12)."""
    iterator = iter(items)
    while batch := list(itertools.islice(iterator, size)):
        yield batch


def _decode(answer: bytes, now: int, unit: int) -> Seen | None:
    """One 4-byte reply: absent, or the stamp read relative to ``now`` (in units) and the hash."""
    if not answer[0]:
        return None
    age = (now - (answer[1] << 8 | answer[2])) & STAMP_MASK
    return Seen((now - age) * unit, answer[3])
