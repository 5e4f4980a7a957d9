"""The job ledger in Redis: exact completion for fan-out crawls.

A job is finished when, and only when, every unit it registered is done, skipped
or failed for good. Three rules make that exact under at-least-once delivery:

* unit ids are deterministic (step + params), so a unit registered twice is one unit;
* a parent registers its children *before* it is marked finished, so ``pending``
  never touches zero while work is still reachable;
* finishing is a Lua script that counts a unit only on its first finish, so a
  redelivered or duplicated message changes nothing.

Until it finishes, a unit's message payload stays in the job's ``open`` hash, so a
unit whose message the broker lost can be sent again (``chains.runtime.reviver``).
A message that runs its list's next pages itself (``Step.inline_next``) records, in
the job's ``carry`` hash, which units it carries now: in the same call that finishes
the page before, so a redelivered carrier knows where its list stood.

A job is ``running``, ``paused`` (its messages are parked as workers take them, see
``chains.runtime.job_control``), then ``finished`` (every unit done, skipped or gone),
``finished_with_failures`` (some failed for good) or ``cancelled`` (the units left
were recorded as cancelled). A unit ends ``done``, ``skipped``, ``gone`` (stored by an
earlier crawl, no longer served), ``failed`` or ``cancelled``; a failed unit keeps its
payload so ``retry`` can run it again in the same job, and a failed or gone unit its
record (step, URL, why). A unit a recrawl no longer reaches (its parent stopped
linking to it) was never registered in this job: it counts as spawned and gone both,
so each step's outcomes add up to its ``spawned``.

Every key of a job carries the hash tag ``{job_id}`` (see ``keys.job``).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import redis

from external_interface import keys
from utils.logs import log_job

log = logging.getLogger(__name__)

Outcome = Literal["done", "skipped", "gone", "failed", "cancelled"]
OUTCOMES: tuple[Outcome, ...] = ("done", "skipped", "gone", "failed", "cancelled")
STEP_FIELDS = ("spawned", "done", "failed", "skipped", "gone", "cancelled", "retried", "items",
               "new", "changed", "unchanged", "requests", "rendered", "cache_hits", "revived",
               "bans",
               "rotations", "captcha_solves", "cookie_refreshes", "dropped_items")

RUNNING, PAUSED, CANCELLED = "running", "paused", "cancelled"
FINISHED, FINISHED_WITH_FAILURES = "finished", "finished_with_failures"
STATES = (RUNNING, PAUSED, FINISHED, FINISHED_WITH_FAILURES, CANCELLED)
TERMINAL = frozenset({FINISHED, FINISHED_WITH_FAILURES, CANCELLED})

_REGISTER = """
if redis.call('HGET', KEYS[4], 'state') == 'cancelled' then return {} end
local new, spawned, payloads = {}, {}, {}
for i = 1, #ARGV, 3 do
  if redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1]) == 1 then
    local key = ARGV[i + 1] .. ':spawned'
    spawned[key] = (spawned[key] or 0) + 1
    if ARGV[i + 2] ~= '' then
      payloads[#payloads + 1] = ARGV[i]
      payloads[#payloads + 1] = ARGV[i + 2]
    end
    new[#new + 1] = ARGV[i]
  end
end
for key, n in pairs(spawned) do redis.call('HINCRBY', KEYS[2], key, n) end
for i = 1, #payloads, 1000 do  -- unpack is bounded by Lua's C stack (about 8000 values)
  redis.call('HSET', KEYS[3], unpack(payloads, i, math.min(i + 999, #payloads)))
end
if #new > 0 then redis.call('HINCRBY', KEYS[2], 'pending', #new) end
return new
"""

_FINISH = """
local now, finished, ended = ARGV[1], 0, ''
local first = 5 + 2 * tonumber(ARGV[2])
local ids = {}
for i = first, #ARGV, 5 do ids[#ids + 1] = ARGV[i] end
if #ids > 0 then
  for _, step in ipairs(redis.call('HMGET', KEYS[1], unpack(ids))) do
    if not step then return {-1, ''} end
  end
end
local add, done = {}, {}
for i = 5, first - 1, 2 do add[ARGV[i]] = (add[ARGV[i]] or 0) + tonumber(ARGV[i + 1]) end
if ARGV[3] ~= '' then
  if ARGV[4] ~= '' then redis.call('HSET', KEYS[8], ARGV[3], ARGV[4])
  else redis.call('HDEL', KEYS[8], ARGV[3]) end
end
for i = first, #ARGV, 5 do
  local unit, step, outcome, items, failure = ARGV[i], ARGV[i+1], ARGV[i+2], ARGV[i+3], ARGV[i+4]
  if redis.call('HSETNX', KEYS[2], unit, outcome) == 1 then
    local key = step .. ':' .. outcome
    add[key] = (add[key] or 0) + 1
    if tonumber(items) > 0 then add[step .. ':items'] = (add[step .. ':items'] or 0) + items end
    if outcome == 'failed' then
      add['failed'] = (add['failed'] or 0) + 1
      if failure ~= '' then redis.call('HSET', KEYS[4], unit, failure) end
      local payload = redis.call('HGET', KEYS[7], unit)
      if payload then redis.call('HSET', KEYS[9], unit, payload) end
    elseif failure ~= '' then
      redis.call('HSET', KEYS[10], unit, failure)
    end
    done[#done + 1] = unit
  end
end
finished = #done
if finished > 0 then add['pending'] = -finished end
local pending = 0
for key, n in pairs(add) do
  if n ~= 0 then
    local now_n = redis.call('HINCRBY', KEYS[3], key, n)
    if key == 'pending' then pending = now_n end
  end
end
if finished > 0 then
  redis.call('HDEL', KEYS[6], unpack(done))
  redis.call('HDEL', KEYS[7], unpack(done))
  redis.call('HDEL', KEYS[11], unpack(done))
  if pending == 0 then
    local state = redis.call('HGET', KEYS[5], 'state')
    if state == 'running' or state == 'paused' then
      local failed = tonumber(redis.call('HGET', KEYS[3], 'failed') or '0')
      ended = failed > 0 and 'finished_with_failures' or 'finished'
      redis.call('HSET', KEYS[5], 'state', ended, 'finished_at', now)
      redis.call('DEL', KEYS[8])  -- nothing runs on: no carrier's record outlives the job
    end
  end
end
redis.call('HSET', KEYS[5], 'active_at', now)
return {finished, ended}
"""


_BEGIN = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return {''} end
if state == 'paused' then
  for i = 2, #ARGV do redis.call('SADD', KEYS[5], ARGV[i]) end
  return {state}
end
redis.call('HSET', KEYS[1], 'active_at', ARGV[1])
local out = {state}
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 1 then
    out[#out + 1] = -1
  else
    local starts = redis.call('HINCRBY', KEYS[3], ARGV[i], 1)
    out[#out + 1] = starts * 2 + redis.call('HSETNX', KEYS[4], ARGV[i], ARGV[1])
  end
end
return out
"""


_END_ATTEMPT = """
redis.call('HSET', KEYS[1], 'active_at', ARGV[1])
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[2], ARGV[i]) == 0
      and redis.call('HINCRBY', KEYS[3], ARGV[i], -1) <= 0 then
    redis.call('HDEL', KEYS[3], ARGV[i])
  end
end
"""


@dataclass(frozen=True)
class Failure:
    """A unit that failed for good: what it was given and why it failed."""

    unit_id: str
    step: str
    params: dict[str, Any]
    error: str
    message: str
    attempts: int
    first_at: float
    failed_at: float
    url: str = ""  # the request's URL, credentials masked ("" when none was built)

    @property
    def reason(self) -> str:
        return f"{self.error}: {self.message}"


@dataclass(frozen=True)
class Finish:
    """One unit's end, as ``finish_many`` records it; ``failure`` is the record of a failed
    unit, or of a gone one (its URL and why: a 404 where a page was)."""

    unit_id: str
    step: str
    outcome: Outcome
    items: int = 0
    failure: Failure | None = None


@dataclass(frozen=True)
class GoneUnit:
    """A unit an earlier crawl stored that this job found gone: its page now answers 404
    or 410, or no page of the crawl links to it any more."""

    unit_id: str
    step: str
    url: str
    reason: str


@dataclass(frozen=True)
class Carried:
    """A message running its list on: the units it carries now, named by its first unit."""

    carrier: str
    units: list[str]


@dataclass(frozen=True)
class Finished:
    """What ``finish_many`` did: how many units it finished first, and the job's state
    when that call finished the job's last unit (None otherwise)."""

    count: int
    ended: str | None = None


@dataclass(frozen=True)
class Begun:
    """What ``begin`` learnt: the job's state, and per unit (finished, open starts, first)."""

    state: str | None
    units: list[tuple[bool, int, bool]]


class UnknownUnit(RuntimeError):
    """A unit was finished that its job never registered: a wiring bug, not a crawl error."""


class Ledger:
    """Job state in Redis; every method is atomic or idempotent, safe from many hosts."""

    def __init__(self, client: redis.Redis) -> None:
        self.redis = client
        self._register = client.register_script(_REGISTER)
        self._finish = client.register_script(_FINISH)
        self._begin = client.register_script(_BEGIN)
        self._end_attempt = client.register_script(_END_ATTEMPT)

    # -- jobs ---------------------------------------------------------------
    def create_job(self, job_id: str, chain: dict[str, Any], params: dict[str, Any],
                   settings: dict[str, dict[str, Any]] | None = None) -> None:
        """Record a new job as running; its chain and its sites' settings travel with it
        (no redeploy, no worker restart)."""
        self.create_jobs(chain, [(job_id, params, settings or {})])

    def create_jobs(self, chain: dict[str, Any],
                    jobs: Sequence[tuple[str, dict[str, Any], dict[str, dict[str, Any]]]]
                    ) -> None:
        """``create_job`` for each (job id, params, settings) of one chain, in one round
        trip: a sharded start's jobs all exist before its first unit is published."""
        now, dumped = time.time(), json.dumps(chain)
        pipe = self.redis.pipeline()
        for job_id, params, settings in jobs:
            pipe.hset(keys.job(job_id, "meta"), mapping={
                "state": "running", "chain": dumped, "params": json.dumps(params),
                "settings": json.dumps(settings), "created_at": now,
            })
            pipe.zadd(keys.JOB_INDEX, {job_id: now})
        pipe.execute()

    def chain_of(self, job_id: str) -> dict[str, Any]:
        raw = self.redis.hget(keys.job(job_id, "meta"), "chain")
        if raw is None:
            raise KeyError(f"job {job_id} is unknown to the ledger")
        return dict(json.loads(raw))

    def settings_of(self, job_id: str) -> dict[str, dict[str, Any]]:
        """The settings of each site, as the launch fixed them ({} for none recorded)."""
        raw = self.redis.hget(keys.job(job_id, "meta"), "settings")
        return dict(json.loads(raw)) if raw else {}

    def meta(self, job_id: str) -> dict[str, str]:
        raw = self.redis.hgetall(keys.job(job_id, "meta"))
        return {_text(k): _text(v) for k, v in raw.items()}

    def state(self, job_id: str) -> str | None:
        raw = self.redis.hget(keys.job(job_id, "meta"), "state")
        return _text(raw) if raw else None

    def job_ids(self, limit: int = 50) -> list[str]:
        return [_text(j) for j in self.redis.zrevrange(keys.JOB_INDEX, 0, limit - 1)]

    # -- units --------------------------------------------------------------
    def register(self, job_id: str, units: list[tuple[str, str]],
                 payloads: list[str] | None = None) -> set[str]:
        """Register ``(unit_id, step)`` pairs; returns the ids that were new. Idempotent.

        ``payloads[i]`` (JSON, see ``open_units``) is what it takes to send unit ``i``
        again; it is kept until the unit finishes.
        """
        if not units:
            return set()
        revive = payloads or [""] * len(units)
        argv = [x for (unit_id, step), payload in zip(units, revive, strict=True)
                for x in (unit_id, step, payload)]
        new = self._register(
            keys=[keys.job(job_id, p) for p in ("units", "counts", "open", "meta")], args=argv)
        return {_text(unit_id) for unit_id in new}

    def open_units(self, job_id: str) -> dict[str, str]:
        """Unit id -> payload of every registered unit that has not finished yet."""
        raw = self.redis.hgetall(keys.job(job_id, "open"))
        return {_text(k): _text(v) for k, v in raw.items()}

    def carried(self, job_id: str, carrier: str | None = None) -> dict[str, list[str]]:
        """Carrier unit id -> the units its message runs now (``Step.inline_next``);
        only ``carrier``'s when given."""
        where = keys.job(job_id, "carry")
        if carrier is not None:
            raw = self.redis.hget(where, carrier)
            return {carrier: json.loads(raw)} if raw else {}
        return {_text(k): json.loads(v) for k, v in self.redis.hgetall(where).items()}

    def open_payloads(self, job_id: str, unit_ids: list[str]) -> dict[str, str]:
        """The payloads of those of ``unit_ids`` that are open (registered, not finished)."""
        if not unit_ids:
            return {}
        raw = self.redis.hmget(keys.job(job_id, "open"), unit_ids)
        return {u: _text(p) for u, p in zip(unit_ids, raw, strict=True) if p is not None}

    def active_at(self, job_id: str) -> float:
        """When a unit of the job last began, ended an attempt or finished (else its creation)."""
        active, created = self.redis.hmget(keys.job(job_id, "meta"), ["active_at", "created_at"])
        return float(active or created or 0.0)

    def is_finished(self, job_id: str, unit_id: str) -> bool:
        return bool(self.redis.hexists(keys.job(job_id, "finished"), unit_id))

    def start(self, job_id: str, unit_id: str) -> tuple[int, bool]:
        """Count one start of the unit: (starts not ended cleanly yet, is this the first?).

        A clean end (finish, or a retry the task scheduled itself) takes the count
        back, so what remains counts the times a worker died holding the unit.
        """
        _, starts, first = self.begin(job_id, [unit_id]).units[0]
        return starts, first

    def end_attempt(self, job_id: str, unit_ids: list[str]) -> None:
        """The units' attempt ended cleanly with a retry scheduled. A unit another
        delivery finished meanwhile (a redelivered message's twin) has no start left to
        take back: its count stays gone, never ``-1``."""
        self._end_attempt(keys=[keys.job(job_id, p) for p in ("meta", "finished",
                                                              "deliveries")],
                          args=[time.time(), *unit_ids])

    def record_raise(self, job_id: str, unit_ids: list[str], reason: str) -> None:
        """The units' message raised ``reason`` (``"ValueError: boom"``) and its worker
        lived: their start stays open (it counts towards the poison limit), and the
        ledger keeps why until they finish, so of a poison unit's starts left open, those
        recorded here were raises and only the rest a worker's death. One message holds a
        unit at a time, so the read and the write need no lock."""
        key = keys.job(job_id, "raised")
        found = self.redis.hmget(key, unit_ids) if unit_ids else []
        pipe = self.redis.pipeline()
        for unit_id, raw in zip(unit_ids, found, strict=True):
            tally: dict[str, int] = json.loads(raw) if raw else {}
            tally[reason] = tally.get(reason, 0) + 1
            pipe.hset(key, unit_id, json.dumps(tally))
        pipe.execute()

    def raises(self, job_id: str, unit_id: str) -> dict[str, int]:
        """What the unit's messages raised since it was registered (or retried): reason
        -> times."""
        raw = self.redis.hget(keys.job(job_id, "raised"), unit_id)
        return dict(json.loads(raw)) if raw else {}

    def finish(self, job_id: str, unit_id: str, step: str, outcome: Outcome, items: int = 0,
               failure: Failure | None = None) -> bool:
        """Mark the unit finished; True if this call did it, False if it was already."""
        return self.finish_many(job_id, [Finish(unit_id, step, outcome, items, failure)]
                                ).count == 1

    def finish_many(self, job_id: str, units: list[Finish],
                    counts: Mapping[str, int] | None = None,
                    carry: Carried | None = None) -> Finished:
        """Finish several units in one atomic call: how many were not finished yet, and the
        job's end when this call finished it.

        ``counts`` (``step:field`` -> n: requests, retried, ...) are added in the same
        call, so a job never reads finished before its batch's statistics are in.
        ``carry`` records which units the carrier message runs next (none: its list
        ends here), before the units that led to them are finished.
        """
        added = {name: n for name, n in (counts or {}).items() if n}
        if not units and not added and carry is None:
            return Finished(0)
        carrier, carried = ("", "") if carry is None else (
            carry.carrier, json.dumps(carry.units) if carry.units else "")
        argv: list[Any] = [time.time(), len(added), carrier, carried,
                           *(x for kv in added.items() for x in kv)]
        for f in units:
            failure = json.dumps(f.failure.__dict__) if f.failure else ""
            argv += [f.unit_id, f.step, f.outcome, f.items, failure]
        result, ended = self._finish(
            keys=[keys.job(job_id, p) for p in
                  ("units", "finished", "counts", "failed", "meta", "deliveries", "open",
                   "carry", "retryable", "gone", "raised")],
            args=argv,
        )
        if int(result) < 0:
            raise UnknownUnit(f"job {job_id}: a unit of {units[0].step} was never registered")
        if ended:  # this call finished the job's last unit: the one "job ... finished" line
            log_job(log, _text(ended), job_id)
        return Finished(int(result), _text(ended) if ended else None)

    @staticmethod
    def step_counts(step: str, fields: Mapping[str, int]) -> dict[str, int]:
        """Per-step statistics as ``finish_many`` takes them: ``{"feed:requests": 3}``."""
        return {f"{step}:{field}": n for field, n in fields.items()}

    def begin(self, job_id: str, unit_ids: list[str]) -> Begun:
        """One round trip at a message's start: the job's state and, per unit, whether it
        is finished already, its open starts (this one counted) and whether it is its first.

        Units already finished are not counted as started: a redelivery is a no-op. In a
        paused job nothing starts: the units are parked for ``resume`` to send again.
        """
        raw = self._begin(keys=[keys.job(job_id, p) for p in
                                ("meta", "finished", "deliveries", "first_start", "parked")],
                          args=[time.time(), *unit_ids])
        state = _text(raw[0]) or None
        if state is None or len(raw) == 1:  # unknown, or paused: nothing was started
            return Begun(state, [(False, 0, False)] * len(unit_ids))
        return Begun(state, [(True, 0, False) if code < 0 else (False, code // 2, bool(code % 2))
                             for code in map(int, raw[1:])])

    def count_many(self, job_id: str, step: str, fields: dict[str, int]) -> None:
        """Add several per-step statistics in one round trip; zeros are skipped."""
        pipe = self.redis.pipeline(transaction=False)
        for field, n in fields.items():
            if n:
                pipe.hincrby(keys.job(job_id, "counts"), f"{step}:{field}", n)
        pipe.execute()

    def count(self, job_id: str, step: str, field: str, n: int = 1) -> None:
        """Add to a per-step statistic that is not an outcome (retried, requests, ...)."""
        self.redis.hincrby(keys.job(job_id, "counts"), f"{step}:{field}", n)

    def credit_requester(self, job_id: str, counts: Mapping[str, int]) -> None:
        """Count a refill job's work in the job that asked for it (its launch params'
        ``requested_by``), on the step that ran dry; nothing for any other job."""
        raw = self.meta(job_id).get("params")
        asked = json.loads(raw).get("requested_by") if raw else None
        if isinstance(asked, dict) and {"job", "step"} <= set(asked):
            self.count_many(asked["job"], asked["step"], dict(counts))

    def first_start(self, job_id: str, unit_id: str) -> float:
        raw = self.redis.hget(keys.job(job_id, "first_start"), unit_id)
        return float(raw) if raw else time.time()

    # -- views --------------------------------------------------------------
    def counts(self, job_id: str) -> dict[str, dict[str, int]]:
        """Per step: ``spawned``, ``done``, ``failed``, ``skipped``, ``retried``, ``items``..."""
        steps: dict[str, dict[str, int]] = {}
        for raw_key, raw_value in self.redis.hgetall(keys.job(job_id, "counts")).items():
            name = _text(raw_key)
            if ":" in name:
                step, field = name.rsplit(":", 1)
                steps.setdefault(step, dict.fromkeys(STEP_FIELDS, 0))[field] = int(raw_value)
        for step, n in self.gone(job_id).items():  # reached before, not now: in both
            counted = steps.setdefault(step, dict.fromkeys(STEP_FIELDS, 0))
            counted["gone"] += n
            counted["spawned"] += n
        return steps

    def drop(self, job_id: str, units: Mapping[str, tuple[str, str]]) -> None:
        """Record units an earlier crawl reached and this job's crawl no longer does (a
        refetched parent stopped listing them, and their own descendants), ``id -> (step,
        url)``: each one this job does not register after all counts as ``gone``."""
        if units:
            self.redis.hset(keys.job(job_id, "dropped"), mapping={
                u: json.dumps([step, url]) for u, (step, url) in units.items()})

    def _dropped(self, job_id: str) -> dict[str, tuple[str, str]]:
        """The dropped units this job did not register (final once it ends): id -> (step,
        url)."""
        dropped = {_text(k): json.loads(v)
                   for k, v in self.redis.hgetall(keys.job(job_id, "dropped")).items()}
        if not dropped:
            return {}
        ids = list(dropped)
        reached = self.redis.hmget(keys.job(job_id, "units"), ids)
        return {u: (dropped[u][0], dropped[u][1])
                for u, step in zip(ids, reached, strict=True) if step is None}

    def gone(self, job_id: str) -> dict[str, int]:
        """Per step, the dropped units this job did not register (final once it ends)."""
        out: dict[str, int] = {}
        for step, _ in self._dropped(job_id).values():
            out[step] = out.get(step, 0) + 1
        return out

    def gone_units(self, job_id: str) -> list[GoneUnit]:
        """Every gone unit with its URL and why: those whose page answered 404 or 410,
        then those no page links to any more."""
        found = [GoneUnit(f.unit_id, f.step, f.url, f.reason)
                 for f in self._records(job_id, "gone")]
        found += [GoneUnit(u, step, url, "no longer linked from the pages that led to it")
                  for u, (step, url) in sorted(self._dropped(job_id).items())]
        return found

    def count_drops(self, job_id: str, reasons: Mapping[str, int]) -> None:
        """Count items the pipelines dropped, by reason (``DropItem``)."""
        self._tally(job_id, "drops", reasons)

    def drops(self, job_id: str) -> dict[str, int]:
        """Items the pipelines dropped, by reason."""
        return self._tallied(job_id, "drops")

    def count_skips(self, job_id: str, reasons: Mapping[str, int]) -> None:
        """Count skipped units by reason (fresh, robots, offsite, a content type)."""
        self._tally(job_id, "skips", reasons)

    def skips(self, job_id: str) -> dict[str, int]:
        """Skipped units by reason."""
        return self._tallied(job_id, "skips")

    def _tally(self, job_id: str, part: str, reasons: Mapping[str, int]) -> None:
        if reasons:
            pipe = self.redis.pipeline(transaction=False)
            for reason, n in reasons.items():
                pipe.hincrby(keys.job(job_id, part), reason, n)
            pipe.execute()

    def _tallied(self, job_id: str, part: str) -> dict[str, int]:
        raw = self.redis.hgetall(keys.job(job_id, part))
        return {_text(k): int(v) for k, v in sorted(raw.items())}

    def pending(self, job_id: str) -> int:
        return int(self.redis.hget(keys.job(job_id, "counts"), "pending") or 0)

    def failures(self, job_id: str) -> list[Failure]:
        return self._records(job_id, "failed")

    def _records(self, job_id: str, part: str) -> list[Failure]:
        raw = self.redis.hgetall(keys.job(job_id, part))
        return sorted((Failure(**json.loads(v)) for v in raw.values()), key=lambda f: f.failed_at)


def _text(value: Any) -> str:
    """redis-py answers bytes unless the client decodes; the ledger speaks str."""
    return value.decode() if isinstance(value, bytes) else str(value)
