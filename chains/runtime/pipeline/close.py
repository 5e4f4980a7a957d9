"""The close phase: every unit's fate acted on, the batch finished in one ledger call.

First the fates are judged against the budgets: a rotation past
``RESOURCES_MAX_ROTATIONS`` fails (``RotationsSpent``), a retry past
``TASK_MAX_RETRIES`` fails ("gave up after N retries"), a unit still live (the
message was interrupted) is retried. Then one ``match`` sorts them: done, unchanged
and skipped units are finished and failed ones recorded, with the batch's statistics
and what the message carries on, in one atomic ledger call; dedup marks go first
(after the save, never before). The adaptive throttle hears what the batch's fetches
met (``polite.observe``: once per batch and bucket). Units that wait go back with a
countdown and units
whose resource was burnt go back at once (neither spends a retry); what is left to
retry is returned for the task adapter to retry with backoff (Retry-After wins).
Done units of a step with a recrawl policy count as ``new`` or ``changed``; gone ones
end ``gone``, which is not a failure.
Pools the batch found dry or low get their refill chain launched.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field

from chains.runtime.dispatch import Publisher
from chains.runtime.launch import launch
from chains.runtime.ledger import Carry, Failure, Finish
from chains.runtime.metrics import Metrics, Tally
from chains.runtime.model import get_chain
from chains.runtime.pipeline import polite
from chains.runtime.pipeline.prepare import (
    Batch,
    Done,
    Failed,
    Gone,
    RetryAfter,
    Skipped,
    Unchanged,
    UnitRun,
)
from chains.runtime.units import Unit, carry_retries, retries_before, rotations
from exceptions import Banned, RotateError
from external_interface import recrawl
from utils.urls import redact_url

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Retry:
    """Units to run again in one new message after ``countdown`` seconds."""

    units: list[Unit]
    countdown: float


@dataclass
class Closed:
    """What the close did: per-outcome counts, and the retry the adapter must schedule."""

    counts: Counter[str] = field(default_factory=Counter)
    retry: Retry | None = None


def close(batch: Batch, runs: list[UnitRun], carry: Carry | None = None) -> Closed:
    """Mark, finish and count the batch, recording what its message carries on to;
    send back what waits or rotates; return what is left to retry."""
    spent = {"bans": sum(isinstance(r.error, Banned) for r in runs),
             "captcha_solves": sum(r.outfit.solves for r in runs if r.outfit is not None)}
    runs = [judge(batch, r) for r in runs]
    ends: list[Finish] = []
    waits: list[UnitRun] = []
    rotate: list[UnitRun] = []
    retry: list[UnitRun] = []
    step = batch.envelope["step"]
    for r in runs:
        match r.fate:
            case Done(items=items):
                ends.append(Finish(r.unit["id"], step, "done", items))
            case Unchanged():
                ends.append(Finish(r.unit["id"], step, "done", 0))
            case Skipped():
                ends.append(Finish(r.unit["id"], step, "skipped"))
            case Gone():
                ends.append(Finish(r.unit["id"], step, "gone"))
            case Failed():
                ends.append(failure(batch, r))
            case RetryAfter(kind="wait"):
                waits.append(r)
            case RetryAfter(kind="rotate"):
                rotate.append(r)
            case RetryAfter():
                retry.append(r)
    _mark(batch, runs)
    changes: Counter[str] = Counter(
        r.fate.change for r in runs if isinstance(r.fate, Done) and r.fate.change)
    unchanged = sum(isinstance(r.fate, Unchanged) for r in runs)
    counts: dict[str, int] = {"retried": len(retry), "unchanged": unchanged, **changes, **spent,
              "requests": sum(r.fetch is not None for r in runs), "rotations": len(rotate)}
    batch.rt.ledger.finish_many(batch.job_id, ends,
                                batch.rt.ledger.step_counts(step, counts), carry)
    Metrics(batch.rt.redis).send(tally(batch.step.name, runs, ends), batch.job_id)
    polite.observe(batch, runs)
    if waits or rotate:
        _send_back(batch, waits, rotate)
    if batch.gear is not None:
        _refill(batch, runs)
        _credit(batch, counts)
    closed = Closed(Counter(e.outcome for e in ends))
    closed.counts["retry"] = len(retry)
    if retry:
        batch.rt.ledger.end_attempt(batch.job_id, [r.unit["id"] for r in retry])
        closed.retry = Retry([r.unit for r in retry], backoff(batch, retry))
    return closed


def judge(batch: Batch, r: UnitRun) -> UnitRun:
    """The fate the budgets allow: rotations and retries past theirs fail for good."""
    fate = r.fate if r.fate is not None else RetryAfter(None, "interrupted before it finished")
    limits = batch.rt.settings
    if isinstance(fate, RetryAfter) and fate.kind == "rotate":
        if r.outfit is None:  # nothing was leased to rotate: an ordinary retry
            fate = RetryAfter(None, fate.reason)
        elif rotations(r.unit) > limits.resources.max_rotations:
            return r.ended(Failed("RotationsSpent", f"gave up after "
                                  f"{limits.resources.max_rotations} rotations onto fresh "
                                  f"resources: {fate.reason}"), r.error)
    if (isinstance(fate, RetryAfter) and fate.kind == "backoff"
            and retries_spent(batch, r.unit) >= limits.task.max_retries):
        return r.ended(Failed("PermanentError", f"gave up after {limits.task.max_retries} "
                              f"retries: {fate.reason}"), r.error)
    return r if fate is r.fate else r.ended(fate, r.error)


def failure(batch: Batch, r: UnitRun) -> Finish:
    """The ledger's record of a unit failed for good: params, error, attempts, times."""
    assert isinstance(r.fate, Failed)
    step = batch.envelope["step"]
    record = Failure(
        unit_id=r.unit["id"], step=step, params=r.unit["params"], error=r.fate.error,
        message=r.fate.message, attempts=r.starts + retries_spent(batch, r.unit),
        first_at=batch.rt.ledger.first_start(batch.job_id, r.unit["id"]),
        failed_at=time.time(), url=redact_url(r.request.full_url) if r.request else "")
    log.info("unit %s of %s failed for good: %s", r.unit["id"], step, record.reason)
    return Finish(r.unit["id"], step, "failed", failure=record)


def _mark(batch: Batch, runs: list[UnitRun]) -> None:
    """Dedup marks of the finished units (their items are saved, children out)."""
    recrawl.mark(batch.rt.dedup, [r.recrawl for r in runs if r.recrawl is not None
                                  and isinstance(r.fate, Done | Unchanged)])


def retries_spent(batch: Batch, unit: Unit) -> int:
    """The unit's retries so far: this message's, and those of the messages before it."""
    return batch.retries + retries_before(unit)


def _send_back(batch: Batch, waits: list[UnitRun], rotate: list[UnitRun]) -> None:
    """Units that must wait (for a slot, a pool) go back with a countdown, units whose
    resource was burnt at once; neither spends a retry, and neither forgets the retries
    it spent (a unit failing, waiting and failing again still gives up)."""
    batch.rt.ledger.end_attempt(batch.job_id, [r.unit["id"] for r in waits + rotate])
    for r in waits + rotate:
        carry_retries(r.unit, batch.retries)
    if rotate:
        publish_again(batch, [r.unit for r in rotate])
    if waits:
        publish_again(batch, [r.unit for r in waits], countdown=max(
            r.fate.seconds or 0.0 for r in waits if isinstance(r.fate, RetryAfter)))


def publish_again(batch: Batch, units: list[Unit], countdown: float | None = None) -> None:
    """Send units of the batch's step back to the queue in new messages."""
    envelope = batch.envelope
    Publisher(batch.rt.dispatch, batch.rt.ledger).publish(
        batch.chain, envelope["job"], envelope["step"], units, envelope["depth"],
        countdown=countdown)


def backoff(batch: Batch, retry: list[UnitRun]) -> float:
    """Exponential backoff with full jitter; a longer Retry-After wins, capped."""
    policy = batch.rt.settings.task
    spent = max(retries_spent(batch, r.unit) for r in retry)
    delay = backoff_s(policy.backoff_base_s, spent, policy.backoff_max_s)
    advised = [r.fate.seconds for r in retry
               if isinstance(r.fate, RetryAfter) and r.fate.seconds]
    return min(max([delay, *advised]), policy.backoff_max_s)


def backoff_s(base_s: float, retries: int, max_s: float) -> float:
    """Full-jitter exponential backoff in floats (Celery's helper takes whole seconds only:
    it calls ``randrange`` and fails on a base of 0.2 s)."""
    return random.uniform(0.0, min(max_s, base_s * 2 ** retries))


def _refill(batch: Batch, runs: list[UnitRun]) -> list[str]:
    """Launch the refill chains of the pools this batch found dry or low, against the same
    server as the job that ran dry (its site settings); returns their job ids."""
    gear = batch.gear
    assert gear is not None
    kinds = {r.need for r in runs if r.need} | {
        kind for r in runs if r.outfit is not None for kind in r.outfit.low}
    asked_by = {"job": batch.job_id, "step": batch.envelope["step"]}
    jobs = []
    for kind in sorted(kinds):
        plan = gear.declared.refills.get(kind)
        if plan is None:
            continue
        for params in batch.rt.providers.refills.claim(kind, gear.site, plan, asked_by):
            jobs.append(launch(get_chain(plan.chain), params, runtime=batch.rt, settings={
                gear.site: batch.settings.model_dump(mode="json")}).job_id)
    return jobs


def _credit(batch: Batch, counts: dict[str, int]) -> None:
    """What a refill job spent (requests, bans, rotations, captchas) counts in the job
    that asked for it too."""
    spent = {name: counts[name] for name in ("requests", "bans", "rotations",
                                             "captcha_solves") if counts.get(name)}
    if spent:
        batch.rt.ledger.credit_requester(batch.job_id, spent)


def tally(task_name: str, runs: list[UnitRun], ends: list[Finish]) -> Tally:
    """The batch's points for the cluster-wide metrics: fetches, parses, items stored,
    outcomes (the ledger stays the exact count)."""
    out = Tally(task_name).started(len(runs))
    for r in runs:
        if r.fetch is not None:
            out.fetched(r.fetch.status, r.fetch.nbytes, r.fetch.seconds)
        if r.parse_s is not None:
            out.parsed(r.parse_s)
    out.stored(sum(e.items for e in ends))
    failed = [r.fate for r in runs if isinstance(r.fate, Failed)]
    outcomes: dict[str, int] = {**Counter(e.outcome for e in ends if e.outcome != "failed"),
                                "failed": len(failed)}
    out.units_finished(outcomes, Counter(f.error for f in failed))
    again = [r for r in runs if isinstance(r.fate, RetryAfter) and r.fate.kind != "wait"]
    rotated = sum(1 for r in again if isinstance(r.error, RotateError))
    return out.retried(len(again), rotated=rotated)
