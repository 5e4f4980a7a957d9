"""The pool in Redis: one sorted set orders the line, Lua makes each call atomic.

``ready`` scores each live member by the time (µs) it may be leased again: the
time it was last leased (so the lowest score is the one rested longest) or the
end of its rest after a ban. Leasing is ``ZRANGEBYSCORE -inf now`` and moving
the winner to ``now``: the back of the line. ``values`` and ``health`` are
hashes by member; ``retired`` remembers retired ids for a while. All keys of a
pool share a hash tag (``keys.pool``); times come from Redis's ``TIME`` unless a
test passes its own.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import cast

import redis

from external_interface import keys
from external_interface.lua import CLOCK, US
from external_interface.pool import Empty, Health, Lease, Outcome, PoolStats, Verdict

# KEYS: ready, values, health, retired. ARGV: now, then id, value pairs. New ids go to
# the front of the line (score 0) with health 1; retired ids are left out.
_ADD = CLOCK + r"""
local now, added = clock(ARGV[1]), 0
for i = 2, #ARGV, 2 do
  local id = ARGV[i]
  if not redis.call('ZSCORE', KEYS[4], id) then
    redis.call('HSET', KEYS[2], id, ARGV[i + 1])
    if redis.call('ZADD', KEYS[1], 'NX', 0, id) == 1 then
      redis.call('HSET', KEYS[3], id, 1)
      added = added + 1
    end
  end
end
return added
"""

# KEYS: ready, values. ARGV: now, then the ids to avoid. Reply {'lease', id, value,
# ready} or {'wait', µs} or {'none'}.
_LEASE = CLOCK + r"""
local now, avoid, n = clock(ARGV[1]), {}, 0
for i = 2, #ARGV do avoid[ARGV[i]] = true; n = n + 1 end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, n + 1)) do
  if not avoid[id] then
    redis.call('ZADD', KEYS[1], now, id)
    local ready = redis.call('ZCOUNT', KEYS[1], '-inf', now)
    return {'lease', id, redis.call('HGET', KEYS[2], id), ready}
  end
end
local later = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES',
                         'LIMIT', 0, n + 1)
for i = 1, #later, 2 do
  if not avoid[later[i]] then return {'wait', tostring(tonumber(later[i + 1]) - now)} end
end
return {'none'}
"""

# KEYS: ready, values, health, retired. ARGV: now, id, verdict, rest (µs), health
# delta, floor, how long retired ids are remembered (µs).
_REPORT = CLOCK + r"""
local now, id = clock(ARGV[1]), ARGV[2]
if not redis.call('ZSCORE', KEYS[1], id) then return 'gone' end
local health = math.min(1, tonumber(redis.call('HGET', KEYS[3], id) or '1') + tonumber(ARGV[5]))
if ARGV[3] == 'retire' or health <= tonumber(ARGV[6]) then
  redis.call('ZREM', KEYS[1], id)
  redis.call('HDEL', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('ZADD', KEYS[4], now, id)
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', now - tonumber(ARGV[7]))
  return 'retired'
end
redis.call('HSET', KEYS[3], id, tostring(health))
local rest = tonumber(ARGV[4])
if rest > 0 then
  redis.call('ZADD', KEYS[1], 'XX', 'GT', now + rest, id)
  return 'cooling'
end
return 'ok'
"""

# KEYS: ready, values, health. ARGV: the ids to keep. Reply: how many were dropped.
_KEEP_ONLY = r"""
local keep, dropped = {}, 0
for i = 1, #ARGV do keep[ARGV[i]] = true end
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if not keep[id] then
    redis.call('ZREM', KEYS[1], id)
    redis.call('HDEL', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
    dropped = dropped + 1
  end
end
return dropped
"""

# KEYS: ready, retired. ARGV: now. Reply {ready, resting, retired}.
_STATS = CLOCK + r"""
local now = clock(ARGV[1])
return {redis.call('ZCOUNT', KEYS[1], '-inf', now), redis.call('ZCOUNT', KEYS[1], '(' .. now,
        '+inf'), redis.call('ZCARD', KEYS[2])}
"""


def _now(now: float | None) -> str:
    return "" if now is None else str(int(now * US))


class RedisPool:
    """The ``Pool`` of one kind and scope, shared by every process that names it."""

    def __init__(self, client: redis.Redis, kind: str, scope: str, health: Health | None = None,
                 keep_retired_s: float = 86_400.0) -> None:
        self.client = client
        self.health = health or Health()
        self.keep_retired_s = keep_retired_s
        self._keys = {part: keys.pool(kind, scope, part)
                      for part in ("ready", "values", "health", "retired")}
        self._add = client.register_script(_ADD)
        self._lease = client.register_script(_LEASE)
        self._report = client.register_script(_REPORT)
        self._stats = client.register_script(_STATS)
        self._keep_only = client.register_script(_KEEP_ONLY)

    def _k(self, *parts: str) -> list[str]:
        return [self._keys[p] for p in parts]

    def add(self, members: Mapping[str, str], now: float | None = None) -> int:
        if not members:
            return 0
        argv = [_now(now)] + [x for pair in members.items() for x in pair]
        return int(self._add(keys=self._k("ready", "values", "health", "retired"), args=argv))

    def lease(self, avoid: Collection[str] = (), now: float | None = None) -> Lease | Empty:
        reply = self._lease(keys=self._k("ready", "values"), args=[_now(now), *avoid])
        kind = _text(reply[0])
        if kind == "lease":
            return Lease(_text(reply[1]), _text(reply[2]), int(reply[3]))
        if kind == "wait":
            return Empty(max(0.0, float(_text(reply[1])) / US))
        return Empty(None)

    def report(self, member: str, verdict: Verdict, cooldown_s: float = 0.0,
               now: float | None = None) -> Outcome:
        reply = self._report(
            keys=self._k("ready", "values", "health", "retired"),
            args=[_now(now), member, verdict.value, int(max(0.0, cooldown_s) * US),
                  self.health.delta(verdict), self.health.floor, int(self.keep_retired_s * US)])
        return cast(Outcome, _text(reply))

    def stats(self, now: float | None = None) -> PoolStats:
        ready, cooling, retired = self._stats(keys=self._k("ready", "retired"), args=[_now(now)])
        return PoolStats(int(ready), int(cooling), int(retired))


    def keep_only(self, members: Collection[str]) -> int:
        return int(self._keep_only(keys=self._k("ready", "values", "health"),
                                   args=list(members)))


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
