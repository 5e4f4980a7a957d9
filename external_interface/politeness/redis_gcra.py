"""The limiter in Redis: GCRA for the rate, a lease set for concurrency, a cooldown key.

Why GCRA rather than a token bucket. Both admit ``burst`` requests at once and
then one per ``1/rate``; a token bucket stores two numbers (tokens, last refill)
and refills them on every call, GCRA stores one, the *theoretical arrival time*
(TAT) of the next request, and answers "wait exactly N µs" from it with one
subtraction. One value means one GET and one SET in the script, no float drift
from refills, and a key that expires by itself once the bucket is idle.

    grant if  max(TAT, now) + T - now <= burst * T + J,  then TAT := max(TAT, now) + T
    else wait max(TAT, now) + T - burst * T - J - now

Why the jitter tolerance ``J`` (GCRA's "delay variation tolerance", at most
``T``). A caller told to wait N µs comes back late: sleep overshoot, a busy
core, the round trip. Without ``J`` each late grant pushes the whole schedule
back (``max(TAT, now)``) and a bucket at ``burst=1`` delivers less than its rate
(about 2 % at 20/s on a quiet two-core machine, more under load). With ``J``
callers are told to come back ``J`` before their slot, so one that wakes up to
``J`` late still finds it and the schedule does not slip: the long-run rate is
the configured one. The price: a window of any length ``W`` may hold one
request more than ``burst + W * rate``.

Why leases in a sorted set. A counter of requests in flight leaks a slot for
good when a worker is killed between INCR and DECR. A lease is a member scored
by its expiry: the acquire script first drops expired leases, so a killed
holder's slot frees itself after the lease TTL, and the count is ``ZCARD``.

Every key of a bucket shares the hash tag ``{bucket}`` (``keys.polite``), so one
EVALSHA per acquire reads the cooldown, the TAT and the leases and either
commits all of them or none. Times are µs since the epoch from Redis's ``TIME``:
one clock for every host, whatever their own clocks say.

The state hash keeps the policy last used (for the monitor and for
``penalize``), a rate estimate (an exponentially weighted count of grants) and
the mean time a lease is held (to say how long a concurrency wait may last).
"""

from __future__ import annotations

import logging
import math
import secrets
import time
from typing import Any, cast

import redis

from config import Politeness
from external_interface import keys
from external_interface.lua import CLOCK, US
from external_interface.politeness import Grant, Wait, WaitReason

log = logging.getLogger(__name__)

STATE_TTL_S = 86_400  # an idle bucket's state hash and index entry go after a day
INDEX_EVERY_S = 60.0  # how often one process refreshes a bucket's index entry
RATE_WINDOW_S = 10.0  # time constant of the rate estimate


# KEYS: tat, leases, cooldown, state. ARGV: now (µs or ''), interval (µs, 0: no
# rate), burst, cap (0: none), lease ttl (µs), lease id, rate window (µs), state
# ttl (s), jitter tolerance (µs), stale after (µs, 0: never). Reply: {'go'} or
# {'wait', µs, reason}. Only leases granted within ``stale after`` count toward the
# cap. A concurrency wait is the mean hold time left on the oldest counted lease (at
# least a quarter of a hold, 10 ms), or 50 ms before any lease was released; never
# past the time that lease expires or stops counting.
_ACQUIRE = CLOCK + r"""
local now, interval, burst = clock(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local cap, ttl, lease = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local cool = tonumber(redis.call('GET', KEYS[3]) or '0')
if cool > now then return {'wait', math.ceil(cool - now), 'cooldown'} end
local wait, reason, tat = 0, 'rate', 0
if interval > 0 then
  tat = math.max(tonumber(redis.call('GET', KEYS[1]) or '0'), now) + interval
  wait = math.max(0, tat - burst * interval - math.min(tonumber(ARGV[9]), interval) - now)
end
if cap > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  local stale, counted = tonumber(ARGV[10]), '-inf'
  if stale > 0 and stale < ttl then counted = '(' .. (now + ttl - stale) end
  if redis.call('ZCOUNT', KEYS[2], counted, '+inf') >= cap then
    local expires = tonumber(redis.call('ZRANGEBYSCORE', KEYS[2], counted, '+inf',
                                        'WITHSCORES', 'LIMIT', 0, 1)[2])
    local hold = tonumber(redis.call('HGET', KEYS[4], 'hold_us'))
    local busy = 50000
    if hold then busy = math.max(expires - ttl + hold - now, hold / 4, 10000) end
    busy = math.min(busy, expires - now)
    if counted ~= '-inf' then busy = math.min(busy, expires - ttl + stale - now + 1) end
    if busy > wait then wait, reason = busy, 'concurrency' end
  end
end
if wait > 0 then return {'wait', math.ceil(wait), reason} end
if interval > 0 then redis.call('SET', KEYS[1], tat, 'PX', math.ceil((tat - now) / 1000)) end
if cap > 0 then
  redis.call('ZADD', KEYS[2], now + ttl, lease)
  redis.call('PEXPIRE', KEYS[2], math.ceil(ttl / 1000))
end
local window = tonumber(ARGV[7])
local s = redis.call('HMGET', KEYS[4], 'ewma', 'ewma_at')
local ewma = (tonumber(s[1]) or 0) * math.exp(-math.max(0, now - (tonumber(s[2]) or now)) / window)
redis.call('HSET', KEYS[4], 'interval_us', interval, 'burst', burst, 'cap', cap,
           'lease_ttl_us', ttl, 'ewma', ewma + 1000000 / window, 'ewma_at', now)
redis.call('EXPIRE', KEYS[4], ARGV[8])
return {'go'}
"""

# KEYS: leases, state. ARGV: lease id, how long it was held (µs). Removing the
# lease and learning the mean hold time (weight 1/8) in one step; one long hold (a
# URL that hung) moves the mean by a bounded step, to at most 2x + 50 ms, and the
# first hold counts as a second at most.
_RELEASE = r"""
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
local held = tonumber(ARGV[2])
local mean = tonumber(redis.call('HGET', KEYS[2], 'hold_us') or math.min(held, 1000000))
held = math.min(held, 2 * mean + 50000)
redis.call('HSET', KEYS[2], 'hold_us', math.floor(mean + (held - mean) / 8))
return 1
"""

# ``cool_down(cooldown, tat, state, now, span)``: block the bucket until ``now +
# span`` (µs). The cooldown only grows. The TAT moves so that the first request
# after the cooldown goes at its end and the next ones at the rate: no burst right
# after a 429. Returns when the cooldown ends. Shared with ``redis_throttle``.
COOL_DOWN = r"""
local function cool_down(cool_key, tat_key, state_key, now, span)
  local untl = math.max(now + span, tonumber(redis.call('GET', cool_key) or '0'))
  if untl > now then redis.call('SET', cool_key, untl, 'PX', math.ceil((untl - now) / 1000)) end
  local conf = redis.call('HMGET', state_key, 'interval_us', 'burst')
  local interval, burst = tonumber(conf[1]) or 0, tonumber(conf[2]) or 1
  if interval > 0 and untl > now then
    local tat = math.max(tonumber(redis.call('GET', tat_key) or '0'), untl + (burst - 1) * interval)
    redis.call('SET', tat_key, tat, 'PX', math.ceil((tat - now) / 1000))
  end
  return untl
end
"""

# KEYS: cooldown, tat, state. ARGV: seconds (µs, already capped), state ttl (s).
# Reply: the cooldown left (µs).
_PENALIZE = CLOCK + COOL_DOWN + r"""
local now = clock('')
local untl = cool_down(KEYS[1], KEYS[2], KEYS[3], now, tonumber(ARGV[1]))
redis.call('HINCRBY', KEYS[3], 'penalties', 1)
redis.call('HSET', KEYS[3], 'last_penalty_us', ARGV[1])
redis.call('EXPIRE', KEYS[3], ARGV[2])
return math.ceil(untl - now)
"""


class RedisLimiter:
    """The ``Limiter`` on one Redis (or one Cluster: a bucket's keys share a slot)."""

    def __init__(self, client: redis.Redis, lease_ttl_s: float = 60.0,
                 max_penalty_s: float = 60.0, default_penalty_s: float = 5.0,
                 jitter_s: float = 0.01) -> None:
        self.client = client
        self.jitter_s = jitter_s
        self.lease_ttl_s = lease_ttl_s
        self.max_penalty_s = max_penalty_s
        self.default_penalty_s = default_penalty_s
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._penalize = client.register_script(_PENALIZE)
        self._indexed: dict[str, float] = {}

    def try_acquire(self, bucket: str, policy: Politeness,
                    now: float | None = None) -> Grant | Wait:
        """One EVALSHA: a grant (with a lease if the policy caps concurrency) or a wait.

        A call that redis-py repeats after a lost connection may use a rate slot
        twice: the bucket then sends less, never more.
        """
        self._index(check_bucket(bucket))
        lease = secrets.token_hex(8) if policy.max_concurrency else ""
        reply = self._acquire(keys=_keys(bucket, "tat", "leases", "cooldown", "state"), args=[
            "" if now is None else round(now * US), round(policy.interval_s * US),
            policy.burst, policy.max_concurrency or 0, round(self.lease_ttl_s * US), lease,
            round(RATE_WINDOW_S * US), STATE_TTL_S, round(self.jitter_s * US),
            round((policy.stale_after_s or 0.0) * US),
        ])
        if reply[0] == b"go":
            return Grant(bucket, lease or None, self._give_back)
        return Wait(int(reply[1]) / US, cast(WaitReason, reply[2].decode()))

    def penalize(self, bucket: str, seconds: float | None = None) -> float:
        """Cool the bucket down for ``seconds`` (default if None), capped; returns what holds."""
        asked = self.default_penalty_s if seconds is None else seconds
        capped = min(max(asked, 0.0), self.max_penalty_s)
        left = self._penalize(keys=_keys(check_bucket(bucket), "cooldown", "tat", "state"),
                              args=[round(capped * US), STATE_TTL_S])
        return int(left) / US

    def state(self, bucket: str) -> dict[str, Any]:
        """The stored policy and live figures of one bucket, at the server's time."""
        pipe = self.client.pipeline(transaction=False)
        pipe.time()
        pipe.hgetall(keys.polite(bucket, "state"))
        pipe.get(keys.polite(bucket, "cooldown"))
        pipe.get(keys.polite(bucket, "tat"))
        pipe.zrangebyscore(keys.polite(bucket, "leases"), "-inf", "+inf", withscores=True)
        (sec, usec), raw, cooldown, tat, leases = pipe.execute()
        return _describe(bucket, sec * US + usec, _numbers(raw), cooldown, tat, leases)

    def buckets(self) -> list[str]:
        """Buckets some process used within the last day, oldest entries pruned."""
        horizon = time.time() - STATE_TTL_S
        self.client.zremrangebyscore(keys.POLITE_INDEX, "-inf", horizon)
        names = cast(list[bytes], self.client.zrange(keys.POLITE_INDEX, 0, -1))
        return sorted(name.decode() for name in names)

    def _give_back(self, grant: Grant) -> None:
        """Release a grant's lease and teach the bucket how long a request holds one."""
        if grant.lease is None:
            return
        held = round((time.monotonic() - grant.granted_at) * US)
        try:
            self._release(keys=_keys(grant.bucket, "leases", "state"),
                          args=[grant.lease, held])
        except redis.RedisError as exc:  # the fetch is done: its response must not be lost
            log.warning("politeness: the slot of %s was not given back (%s); it frees itself "
                        "within %.0f s", grant.bucket, exc, self.lease_ttl_s)

    def _index(self, bucket: str) -> None:
        """Record the bucket in the index, at most once a minute per process.

        The index is not in the bucket's slot, so it cannot be written by the
        acquire script under Redis Cluster; a separate, rare write is enough.
        """
        wall = time.time()
        if wall - self._indexed.get(bucket, 0.0) >= INDEX_EVERY_S:
            self.client.zadd(keys.POLITE_INDEX, {bucket: wall})
            self._indexed[bucket] = wall


def check_bucket(bucket: str) -> str:
    """The name, if it can be a Redis Cluster hash tag: non-empty, without braces."""
    if not bucket or "{" in bucket or "}" in bucket:
        raise ValueError(f"bucket name {bucket!r} must be non-empty, without braces")
    return bucket


def _keys(bucket: str, *parts: str) -> list[str]:
    """The bucket's keys, in the order a script expects them."""
    return [keys.polite(bucket, part) for part in parts]


def _numbers(raw: dict[bytes, bytes]) -> dict[str, float]:
    """A state hash as floats by field name."""
    return {name.decode(): float(value) for name, value in raw.items()}


def _describe(bucket: str, now: int, conf: dict[str, float], cooldown: bytes | None,
              tat: bytes | None, leases: list[tuple[bytes, float]]) -> dict[str, Any]:
    """The monitor's view of a bucket from its raw keys; times in seconds."""
    interval, burst = conf.get("interval_us", 0.0), int(conf.get("burst", 1))
    age = max(0.0, now - conf.get("ewma_at", now))
    backlog = float(tat or 0) - (burst - 1) * interval - now
    return {
        "bucket": bucket,
        "rate_per_s": US / interval if interval else None,
        "burst": burst,
        "max_concurrency": int(conf["cap"]) if conf.get("cap") else None,
        "rate_estimate_per_s": round(conf.get("ewma", 0.0) * math.exp(-age / (RATE_WINDOW_S * US)),
                                     3),
        "cooldown_remaining_s": max(0.0, float(cooldown or 0) - now) / US,
        "next_slot_in_s": max(0.0, backlog) / US,
        "leases_held": sum(1 for _, expires in leases if expires > now),
        "mean_hold_s": conf["hold_us"] / US if "hold_us" in conf else None,
        "penalties": int(conf.get("penalties", 0)),
        "last_penalty_s": conf["last_penalty_us"] / US if "last_penalty_us" in conf else None,
    }
