"""Operating a job from any host: pause, resume, cancel, and retry its failed units.

Every verb is one state change in the ledger that every worker reads at a message's
start (``Ledger.begin``), so it holds cluster-wide without talking to a worker:

* **pause**: a message of the job that a worker takes from now on starts nothing; its
  units are parked (their payloads stay in the job's ``open`` hash) and the message is
  acknowledged. Units already fetching finish, and their children are parked in turn
  when they are taken. No queue is purged, so nothing is lost.
* **resume**: the job runs again and its parked units are published again, exactly
  once each (the parked set is read and emptied in one atomic call).
* **cancel**: the job ends ``cancelled``; every unit still open is recorded as
  cancelled; messages still queued are acknowledged without work, and a unit in flight
  registers no children.
* **retry**: failed units (all, or those of one step or error class) are reopened in
  the same job: each moves from failed back to pending, runs again, and counts once
  more as what it ends as; its children join the job.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

from chains.runtime.dispatch import Dispatch, Publisher
from chains.runtime.ledger import CANCELLED, PAUSED, RUNNING, Ledger
from chains.runtime.model import Chain
from chains.runtime.units import Unit, revived
from external_interface import keys
from utils.logs import log_job

log = logging.getLogger(__name__)

_PAUSE = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'paused', 'paused_at', ARGV[1])
return 1
"""

_RESUME = """
if redis.call('HGET', KEYS[1], 'state') ~= 'paused' then return {} end
redis.call('HSET', KEYS[1], 'state', 'running', 'active_at', ARGV[1])
redis.call('HDEL', KEYS[1], 'paused_at')
local parked = redis.call('SMEMBERS', KEYS[2])
redis.call('DEL', KEYS[2])
local out = {}
for _, unit in ipairs(parked) do
  local payload = redis.call('HGET', KEYS[3], unit)
  if payload then out[#out + 1] = payload end
end
return out
"""

_STOP = """
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'running' and state ~= 'paused' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'cancelled', 'finished_at', ARGV[1])
redis.call('DEL', KEYS[2])
return 1
"""

_CANCEL_UNITS = """
local n = 0
for i = 1, #ARGV do
  local unit = ARGV[i]
  if redis.call('HSETNX', KEYS[1], unit, 'cancelled') == 1 then
    local step = redis.call('HGET', KEYS[3], unit) or '?'
    redis.call('HINCRBY', KEYS[2], step .. ':cancelled', 1)
    redis.call('HINCRBY', KEYS[2], 'pending', -1)
    n = n + 1
  end
  redis.call('HDEL', KEYS[4], unit)
end
return n
"""

_REOPEN = """
local state = redis.call('HGET', KEYS[8], 'state')
if not state or state == 'cancelled' then return {} end
local out = {}
for i = 2, #ARGV do
  local unit = ARGV[i]
  local payload = redis.call('HGET', KEYS[7], unit)
  if payload and redis.call('HGET', KEYS[1], unit) == 'failed' then
    local step = redis.call('HGET', KEYS[4], unit)
    redis.call('HDEL', KEYS[1], unit)
    redis.call('HDEL', KEYS[2], unit)
    redis.call('HDEL', KEYS[7], unit)
    redis.call('HDEL', KEYS[6], unit)
    redis.call('HINCRBY', KEYS[3], step .. ':failed', -1)
    redis.call('HINCRBY', KEYS[3], 'failed', -1)
    redis.call('HINCRBY', KEYS[3], 'pending', 1)
    redis.call('HSET', KEYS[5], unit, payload)
    out[#out + 1] = payload
  end
end
if #out > 0 then
  if state ~= 'paused' then redis.call('HSET', KEYS[8], 'state', 'running') end
  redis.call('HDEL', KEYS[8], 'finished_at')
  redis.call('HSET', KEYS[8], 'active_at', ARGV[1])
end
return out
"""

CANCEL_CHUNK = 1000  # units looked at per atomic call (a huge job never blocks Redis long)


class JobStateError(RuntimeError):
    """The verb does not apply to the job in its state (say which, and what to do)."""


class JobControl:
    """The verbs on one cluster: its ledger, and where resumed and retried units go."""

    def __init__(self, ledger: Ledger, dispatch: Dispatch) -> None:
        self.ledger = ledger
        self.dispatch = dispatch
        client = ledger.redis
        self._pause = client.register_script(_PAUSE)
        self._resume = client.register_script(_RESUME)
        self._stop = client.register_script(_STOP)
        self._cancel_units = client.register_script(_CANCEL_UNITS)
        self._reopen = client.register_script(_REOPEN)

    def _state(self, job_id: str) -> str:
        state = self.ledger.state(job_id)
        if state is None:
            raise JobStateError(f"job {job_id} is unknown to the ledger: `crawlchain jobs` "
                                "lists the jobs it knows")
        return state

    def pause(self, job_id: str) -> None:
        """No unit of the job starts from now on, on any worker; those fetching finish."""
        state = self._state(job_id)
        if state == PAUSED:
            return
        if not self._pause(keys=[keys.job(job_id, "meta")], args=[time.time()]):
            raise JobStateError(f"job {job_id} is {state}: only a running job can be paused")
        log_job(log, PAUSED, job_id)

    def resume(self, job_id: str) -> int:
        """Run a paused job again; returns how many parked units were sent again."""
        state = self._state(job_id)
        if state != PAUSED:
            raise JobStateError(f"job {job_id} is {state}, not paused: nothing to resume")
        payloads = self._resume(keys=[keys.job(job_id, p) for p in ("meta", "parked", "open")],
                                args=[time.time()])
        sent = self._publish(job_id, payloads)
        log_job(log, "resumed", job_id, units=sent)
        return sent

    def cancel(self, job_id: str) -> int:
        """End the job now; returns how many open units were recorded as cancelled (every
        registered unit not finished yet, in chunks: finished ones are left as they are)."""
        state = self._state(job_id)
        if not self._stop(keys=[keys.job(job_id, "meta"), keys.job(job_id, "parked")],
                          args=[time.time()]):
            raise JobStateError(f"job {job_id} is {state}: only a running or paused job can "
                                "be cancelled")
        cancelled, chunk = 0, []
        unit_keys = [keys.job(job_id, p) for p in ("finished", "counts", "units", "open")]
        for unit_id, _ in self.ledger.redis.hscan_iter(keys.job(job_id, "units"),
                                                       count=CANCEL_CHUNK):
            chunk.append(unit_id)
            if len(chunk) == CANCEL_CHUNK:
                cancelled += int(self._cancel_units(keys=unit_keys, args=chunk))
                chunk = []
        if chunk:
            cancelled += int(self._cancel_units(keys=unit_keys, args=chunk))
        log_job(log, CANCELLED, job_id, units=cancelled)
        return cancelled

    def retry_failed(self, job_id: str, step: str | None = None,
                     error: str | None = None) -> int:
        """Run the job's failed units again (only ``step``'s, or only ``error``'s class);
        returns how many were sent."""
        state = self._state(job_id)
        if state == CANCELLED:
            raise JobStateError(f"job {job_id} was cancelled: launch the chain again instead")
        chosen = [f.unit_id for f in self.ledger.failures(job_id)
                  if (step is None or f.step == step) and (error is None or f.error == error)]
        if not chosen:
            return 0
        payloads = self._reopen(
            keys=[keys.job(job_id, p) for p in ("finished", "failed", "counts", "units", "open",
                                                "deliveries", "retryable", "meta")],
            args=[time.time(), *chosen])
        sent = self._publish(job_id, payloads)
        log_job(log, "retried", job_id, units=sent)
        return sent

    def _publish(self, job_id: str, payloads: Iterable[bytes | str]) -> int:
        """Send open units again, grouped into messages of their step and depth."""
        groups: dict[tuple[str, int], list[Unit]] = {}
        for payload in payloads:
            step, depth, unit = revived(payload.decode() if isinstance(payload, bytes)
                                        else payload)
            groups.setdefault((step, depth), []).append(unit)
        if groups:
            chain = Chain.model_validate(self.ledger.chain_of(job_id))
            publisher = Publisher(self.dispatch, self.ledger)
            for (step, depth), units in groups.items():
                publisher.publish(chain, job_id, step, units, depth)
        return sum(map(len, groups.values()))


__all__ = ["RUNNING", "JobControl", "JobStateError"]
