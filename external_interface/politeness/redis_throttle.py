"""The adaptive throttle in Redis: one hash per key, one Lua script per batch.

The algorithm is described in ``politeness.throttle``; this script is its only
implementation, so every process and host runs exactly the same controller on
exactly the same state. A batch of observations is one EVALSHA; asking for the
policy is the same script with no observations (so the time-based increase is
computed in one place too), at most every ``refresh_s`` per process and key.

The state hash ``keys.polite(key, "throttle")`` shares the limiter's hash tag, so
the script also writes the limiter's cooldown (a Retry-After) atomically with
the decision. Times are µs on the server's clock (or a pinned one in tests).
"""

from __future__ import annotations

import math
import threading
import time
import zlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import redis

from config import Politeness
from external_interface import keys
from external_interface.lua import CLOCK, US
from external_interface.politeness.redis_gcra import COOL_DOWN, STATE_TTL_S, check_bucket
from external_interface.politeness.throttle import Control, Observation

if TYPE_CHECKING:
    from config import ThrottleSettings

INDEX_EVERY_S = 60.0
STALE_MIN_S = 1.0  # a request in flight this long (or STALE_FACTOR latencies) leaves the window
STALE_FACTOR = 8.0
PHASES = {0: "start", 1: "steady"}

# KEYS: throttle state, limiter cooldown, limiter tat, limiter state, failing URLs.
# ARGV: now (µs or ''), start rate, start concurrency, min rate, max rate, max
# concurrency, max retry-after (µs), hold (µs), plateau (µs), latency factor,
# latency slack (µs), state ttl (s), ceiling rate (0: none), ceiling concurrency
# (0: none), forget after (µs idle); then per observation: latency (µs), status,
# retry-after (µs, -1: none), age (µs since the response ended), URL key ('': none).
# Reply: {rate (string, '' when unlimited), concurrency, cooldown left (µs),
# phase, ceiling (string), latency (s, string)}.
_OBSERVE = CLOCK + COOL_DOWN + r"""
local now = clock(ARGV[1])
local start_rate, start_conc = tonumber(ARGV[2]), tonumber(ARGV[3])
local min_rate, max_rate, max_conc = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local max_ra, hold_max = tonumber(ARGV[7]), tonumber(ARGV[8]) / 1e6
local plateau = tonumber(ARGV[9]) / 1e6
local lat_factor, lat_slack = tonumber(ARGV[10]), tonumber(ARGV[11]) / 1e6
local cap_rate, cap_conc = tonumber(ARGV[13]), tonumber(ARGV[14])
local forget = tonumber(ARGV[15])
if cap_rate > 0 then max_rate = math.min(max_rate, cap_rate) end
if cap_conc > 0 then max_conc = math.min(max_conc, cap_conc) end

local names = {'r', 'c', 'ph', 'lf', 'lb', 'nl', 's5f', 's5s', 's4', 'ceil', 'plat', 'dec',
               't0', 'accn', 'send', 'norm', 'at', 'n', 'n429', 'n5xx', 'ndec'}
local raw = redis.call('HMGET', KEYS[1], unpack(names))
local s = {}
for i, name in ipairs(names) do s[name] = tonumber(raw[i]) end
if s.at ~= nil and now - s.at > forget then  -- idle that long: what it learnt is old news
  s.at = nil
  redis.call('DEL', KEYS[5])
end
if s.at == nil then
  s = {r = start_rate, c = start_conc, ph = 0, lf = 0, lb = 0, nl = 0, s5f = 0, s5s = 0, s4 = 0,
       ceil = 0, plat = 1, dec = 0, t0 = now, accn = 0, send = 0, norm = 0, at = now, n = 0,
       n429 = 0, n5xx = 0, ndec = 0}
end

local W = 1.0  -- seconds: the window of the send-rate average
local dt = math.max(0, now - s.at) / 1e6
s.at = now
local f = math.exp(-dt / W)
s.send, s.norm = s.send * f, s.norm * f + (1 - f)

local signal, cool_for = nil, 0
local failing = redis.call('HLEN', KEYS[5])
if failing > 10000 then redis.call('DEL', KEYS[5]); failing = 0 end
for i = 16, #ARGV, 5 do
  local lat, status = tonumber(ARGV[i]) / 1e6, tonumber(ARGV[i + 1])
  local ra, age, url = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3]), ARGV[i + 4]
  local fresh = now - age - lat * 1e6 >= s.dec
  local rate_sig = status == 429 or (status == 503 and ra >= 0)
  local e5 = (status >= 500 and status < 600 and not rate_sig) or status == 0
  local again = false  -- a URL failing again: its own trouble, not the host's
  if url ~= '' and (rate_sig or e5) then
    again = redis.call('HSETNX', KEYS[5], url, now) == 0
    if not again then failing = failing + 1 end
  elseif url ~= '' and failing > 0 then
    failing = failing - redis.call('HDEL', KEYS[5], url)
  end
  s.send = s.send + 1 / W
  if not again then
    s.n = s.n + 1
    s.s5f = s.s5f + ((e5 and 1 or 0) - s.s5f) / math.min(20, s.n)
    s.s5s = s.s5s + ((e5 and 1 or 0) - s.s5s) / math.min(200, s.n)
    s.s4 = s.s4 + ((rate_sig and 1 or 0) - s.s4) / 10
    if rate_sig then
      s.n429 = s.n429 + 1
      if fresh then
        signal = 'rate'
        if ra >= 0 then cool_for = math.max(cool_for, math.min(ra, max_ra)) end
      end
    else
      if fresh then s.accn = s.accn + 1 end
      if e5 then
        s.n5xx = s.n5xx + 1
        if fresh and s.s5f > 0.25 and s.s5f > 2 * s.s5s + 0.1 then signal = signal or '5xx' end
      else
        -- one slow path moves the average by a bounded step: only latency rising on
        -- many answers in a row (every path) makes a signal
        if s.nl == 0 then s.lf, s.lb = lat, lat
        else s.lf = s.lf + (math.min(lat, 2 * s.lf + lat_slack) - s.lf) * 0.2 end
        s.nl = s.nl + 1
        if s.ph == 0 then  -- slow start; twice as fast for an answer fast and clean
          s.c = math.min(s.c + ((lat <= lat_slack and s.n5xx == 0) and 2 or 1), max_conc)
        end
      end
    end
  end
end
if s.lf < s.lb then s.lb = s.lf else s.lb = s.lb + (s.lf - s.lb) * math.min(1, dt / 30) end
if s.nl >= 10 and s.lf > s.lb * lat_factor + lat_slack then signal = signal or 'latency' end
if cool_for > 0 then cool_down(KEYS[2], KEYS[3], KEYS[4], now, cool_for) end

local sendr = s.send / math.max(s.norm, 0.001)
local hold = math.min(hold_max, math.max(0.05, 2 * s.lf))
local since = (now - s.dec) / 1e6
if signal and since >= hold then
  local new
  if signal == 'rate' then
    local span = (now - math.max(s.dec, s.t0)) / 1e6
    local cest
    if s.s4 > 0.5 then  -- a storm: the bucket is empty, what got through is its rate
      cest = math.min((s.accn + 1) / math.max(span, 0.05), 0.9 * sendr)
    elseif span >= 0.5 then  -- got through over a while (a floor), or just above it
      cest = math.max(s.accn / span, 0.9 * sendr)
    else
      cest = 0.9 * sendr
    end
    new = math.min(0.9 * s.r, 0.95 * cest)
    if s.ph == 0 then new = math.min(new, 0.5 * sendr) end  -- slow start overshoots 2x
    if s.ceil > 0 and math.abs(cest - s.ceil) < 0.15 * s.ceil then
      s.plat = math.min(2 * math.max(s.plat, plateau / 2), 60)
    else
      s.plat = 1
    end
    s.ceil = cest
  else
    new = 0.7 * math.min(s.r, sendr)
  end
  s.r, s.ph, s.dec, s.accn, s.ndec = math.max(min_rate, new), 1, now, 0, s.ndec + 1
elseif not signal and since >= hold then
  if s.ph == 0 then
    s.r = math.max(start_rate, sendr)
  elseif s.lf <= 2 * s.lb + lat_slack and s.s5f <= 2 * s.s5s + 0.1 and sendr >= 0.8 * s.r then
    if s.ceil > 0 then
      local x = math.max(0, since - s.plat)
      local target = 0.97 * s.ceil * (1 + 0.05 * x + 0.05 * x * x)
      if s.r < target then s.r = s.r + (target - s.r) * math.min(1, 2 * dt) end
    else
      s.r = s.r + 0.25 * s.r * dt
    end
  end
end
s.r = math.max(min_rate, math.min(s.r, max_rate))

local flat = {}
for _, name in ipairs(names) do
  table.insert(flat, name)
  table.insert(flat, s[name])
end
redis.call('HSET', KEYS[1], unpack(flat))
redis.call('EXPIRE', KEYS[1], ARGV[12])
if failing > 0 then redis.call('EXPIRE', KEYS[5], ARGV[12]) end

local rate, conc = '', math.min(max_conc, math.floor(s.c))
if s.ph == 1 then
  rate = tostring(s.r)
  conc = math.min(max_conc, math.max(2, math.ceil(2 * s.r * s.lf) + 2))
elseif cap_rate > 0 then
  rate = tostring(cap_rate)
end
local cool = tonumber(redis.call('GET', KEYS[2]) or '0')
return {rate, conc, math.max(0, cool - now), s.ph, tostring(s.ceil), tostring(s.lf)}
"""


class RedisThrottle:
    """The ``Throttle`` on one Redis (or a Cluster: a key's hashes share a slot)."""

    def __init__(self, client: redis.Redis, settings: ThrottleSettings) -> None:
        self.client = client
        self.settings = settings
        self._observe = client.register_script(_OBSERVE)
        self._copies: dict[str, tuple[float, Politeness | None, Politeness]] = {}
        self._indexed: dict[str, float] = {}
        self._lock = threading.Lock()

    def current(self, key: str, ceiling: Politeness | None = None) -> Politeness:
        """This process's copy if fresh and for the same ceiling, else one script call."""
        with self._lock:
            copy = self._copies.get(key)
        if copy and copy[1] == ceiling and time.monotonic() - copy[0] < self.settings.refresh_s:
            return copy[2]
        return self.observe(key, (), ceiling).policy

    def observe(self, key: str, observations: Sequence[Observation],
                ceiling: Politeness | None = None, now: float | None = None) -> Control:
        """One EVALSHA for the batch; the reply refreshes this process's copy."""
        self._index(check_bucket(key))
        conf = self.settings
        mono = time.monotonic()
        args: list[float | int | str] = [
            "" if now is None else round(now * US), conf.start_rate_per_s,
            conf.start_concurrency, conf.min_rate_per_s, conf.max_rate_per_s,
            conf.max_concurrency, round(conf.max_retry_after_s * US), round(conf.hold_s * US),
            round(conf.plateau_s * US), conf.latency_factor, round(conf.latency_slack_s * US),
            STATE_TTL_S, (ceiling.rate_per_s or 0) if ceiling else 0,
            (ceiling.max_concurrency or 0) if ceiling else 0, round(conf.forget_s * US),
        ]
        for seen in observations:
            age = 0.0 if seen.done_at is None else max(0.0, (now or mono) - seen.done_at)
            retry = -1 if seen.retry_after_s is None else round(max(0.0, seen.retry_after_s) * US)
            args += [round(max(0.0, seen.latency_s) * US), seen.status, retry, round(age * US),
                     url_key(seen.url)]
        reply = self._observe(keys=[keys.polite(key, part) for part in (
            "throttle", "cooldown", "tat", "state", "failing")], args=args)
        control = _control(reply, bool(ceiling and ceiling.max_concurrency))
        with self._lock:
            self._copies[key] = (mono, ceiling, control.policy)
        return control

    def state(self, key: str) -> dict[str, Any]:
        """The stored controller of one key, named for a monitor."""
        raw = cast(dict[bytes, bytes],
                   self.client.hgetall(keys.polite(check_bucket(key), "throttle")))
        conf = {name.decode(): float(value) for name, value in raw.items()}
        if not conf:
            return {"key": key, "phase": None}
        return {
            "key": key,
            "phase": PHASES.get(int(conf["ph"]), "?"),
            "rate_per_s": round(conf["r"], 3) if conf["ph"] else None,
            "window": int(conf["c"]),
            "ceiling_per_s": round(conf["ceil"], 3) or None,
            "latency_s": round(conf["lf"], 4),
            "baseline_latency_s": round(conf["lb"], 4),
            "send_rate_per_s": round(conf["send"] / max(conf["norm"], 1e-3), 3),
            "responses": int(conf["n"]),
            "rate_limited": int(conf["n429"]),
            "server_errors": int(conf["n5xx"]),
            "decreases": int(conf["ndec"]),
        }

    def observed(self) -> list[str]:
        """Keys some process observed within the last day."""
        horizon = time.time() - STATE_TTL_S
        self.client.zremrangebyscore(keys.THROTTLE_INDEX, "-inf", horizon)
        names = cast(list[bytes], self.client.zrange(keys.THROTTLE_INDEX, 0, -1))
        return sorted(name.decode() for name in names)

    def _index(self, key: str) -> None:
        """Record the key for the monitor, at most once a minute per process."""
        wall = time.time()
        if wall - self._indexed.get(key, 0.0) >= INDEX_EVERY_S:
            self.client.zadd(keys.THROTTLE_INDEX, {key: wall})
            self._indexed[key] = wall


def url_key(url: str) -> str:
    """A short key of a URL for the set of failing URLs ('' for none): 8 hex digits."""
    return f"{zlib.crc32(url.encode()):08x}" if url else ""


def _control(reply: list[Any], declared_cap: bool = False) -> Control:
    """The script's reply as a ``Control`` (the script applied the ceiling). The window's
    requests stop counting once in flight ``STALE_FACTOR`` times the host's latency (at
    least ``STALE_MIN_S``): one URL that hangs does not hold the host's window; a declared
    concurrency cap counts every request to its end."""
    rate_text, conc, cool_us, phase, ceil_text, latency_text = reply
    rate = float(rate_text) if rate_text else None
    if rate is not None and not math.isfinite(rate):
        rate = None
    stale = None if declared_cap else max(STALE_MIN_S, STALE_FACTOR * float(latency_text))
    policy = Politeness(rate_per_s=rate, burst=1, max_concurrency=int(conc),
                        stale_after_s=stale)
    ceil = float(ceil_text)
    return Control(policy, int(cool_us) / US, PHASES.get(int(phase), "?"), ceil or None)


def rates(client: redis.Redis, settings: ThrottleSettings) -> list[dict[str, Any]]:
    """The monitor's read: every key's controller (rate, ceiling, phase, counts)."""
    throttle = RedisThrottle(client, settings)
    return [throttle.state(key) for key in throttle.observed()]
