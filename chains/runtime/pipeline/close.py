"""The close phase: every unit's fate acted on, the batch finished in one ledger call, and
what it came to reported to the batch's observers.

First the fates are judged against the budgets: a rotation past
``RESOURCES_MAX_ROTATIONS`` fails (``RotationsSpent``), a retry past
``TASK_MAX_RETRIES`` fails ("gave up after N retries"; one that timed out, past
``TASK_MAX_TIMEOUT_RETRIES``), a unit still live (the
message was interrupted) is retried. A unit that met only transient errors also fails
once ``TASK_GIVE_UP_S`` (2 minutes) have passed since its first start, retries left
or not, naming the host and the error: a site that never answers ends its units in
bounded time. Then one ``match`` sorts them: done, unchanged
and skipped units are finished and failed ones recorded, with the batch's statistics
and what the message carries on, in one atomic ledger call; dedup marks go first
(after the save, never before). Units that wait go back with a countdown and units
whose resource was burnt go back at once (neither spends a retry); what is left to
retry is returned for the task adapter to retry with backoff (Retry-After wins).
Done units of a step with a recrawl policy count as ``new`` or ``changed``; gone ones
end ``gone``, which is not a failure.

Last, the batch is reported (``extensions.BatchClosed``) to its observers, the runtime's
own first: metrics, the adaptive throttle's feedback, pool refills and what a refill
job spent (``chains.runtime.observers``), then the cluster's and the site's.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from chains.runtime.dispatch import Publisher
from chains.runtime.extensions import BatchClosed, Outcome, UnitClosed
from chains.runtime.ledger import Carried, Failure, Finish
from chains.runtime.observers import announce
from chains.runtime.pipeline.batch import (
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
from exceptions import Banned, RotateError, TimedOut
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


def close(batch: Batch, runs: list[UnitRun], carried: Carried | None = None) -> Closed:
    """Mark, finish and count the batch, recording what its message carries on to;
    send back what waits or rotates; report it; return what is left to retry."""
    runs = [judge(batch, r) for r in runs]
    ends, waits, rotate, retry = sort_fates(batch, runs)
    _mark(batch, runs)
    counts = batch_counts(runs, len(retry), len(rotate))
    finished = batch.rt.ledger.finish_many(
        batch.job_id, ends, batch.rt.ledger.step_counts(batch.envelope["step"], counts),
        carried)
    drops = Counter(reason for r in runs for reason in r.dropped)
    if drops:
        batch.rt.ledger.count_drops(batch.job_id, drops)
    skips = Counter(r.fate.reason for r in runs if isinstance(r.fate, Skipped))
    if skips:
        batch.rt.ledger.count_skips(batch.job_id, skips)
    if waits or rotate:
        _send_back(batch, waits, rotate)
    closed = Closed(Counter(e.outcome for e in ends))
    closed.counts["retry"] = len(retry)
    retry = _retry_slow_apart(batch, retry)
    if retry:
        batch.rt.ledger.end_attempt(batch.job_id, [r.unit["id"] for r in retry])
        closed.retry = Retry([r.unit for r in retry], backoff(batch, retry))
    announce(batch.observers, report(batch, runs, counts), finished.ended,
             batch.rt.interrupts)
    return closed


def sort_fates(batch: Batch, runs: list[UnitRun]
               ) -> tuple[list[Finish], list[UnitRun], list[UnitRun], list[UnitRun]]:
    """The ledger's finishes, then the units that wait, rotate and retry."""
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
            case Gone(reason=reason):
                ends.append(Finish(r.unit["id"], step, "gone",
                                   failure=record(batch, r, _error_class(r), reason)))
            case Failed():
                ends.append(failure(batch, r))
            case RetryAfter(kind="wait"):
                waits.append(r)
            case RetryAfter(kind="rotate"):
                rotate.append(r)
            case RetryAfter():
                retry.append(r)
    return ends, waits, rotate, retry


def batch_counts(runs: list[UnitRun], retried: int, rotated: int) -> dict[str, int]:
    """The batch's statistics for the job's per-step counts."""
    changes: Counter[str] = Counter(
        r.fate.change for r in runs if isinstance(r.fate, Done) and r.fate.change)
    return {"retried": retried, "rotations": rotated, **changes,
            "unchanged": sum(isinstance(r.fate, Unchanged) for r in runs),
            "requests": sum(r.fetch is not None and not r.fetch.cached for r in runs),
            "rendered": sum(r.fetch is not None and r.fetch.rendered for r in runs),
            "cache_hits": sum(r.fetch is not None and r.fetch.cached for r in runs),
            "bans": sum(isinstance(r.error, Banned) for r in runs),
            "captcha_solves": sum(r.leases.solves for r in runs if r.leases is not None),
            "dropped_items": sum(len(r.dropped) for r in runs)}


def judge(batch: Batch, r: UnitRun) -> UnitRun:
    """The fate the budgets allow: rotations and retries past theirs fail for good."""
    fate = r.fate if r.fate is not None else RetryAfter(None, "interrupted before it finished")
    limits = batch.rt.settings
    if isinstance(fate, RetryAfter) and fate.kind == "rotate":
        if r.leases is None:  # nothing was leased to rotate: an ordinary retry
            fate = RetryAfter(None, fate.reason)
        elif rotations(r.unit) > limits.resources.max_rotations:
            return r.ended(Failed("RotationsSpent", f"gave up after "
                                  f"{limits.resources.max_rotations} rotations onto fresh "
                                  f"resources: {fate.reason}"), r.error)
    if isinstance(fate, RetryAfter) and fate.kind == "backoff":
        spent = retries_spent(batch, r.unit)
        since = time.time() - batch.rt.ledger.first_start(batch.job_id, r.unit["id"])
        budget, name = limits.task.max_retries, "TASK_MAX_RETRIES"
        if isinstance(r.error, TimedOut) and limits.task.max_timeout_retries < budget:
            budget, name = limits.task.max_timeout_retries, "TASK_MAX_TIMEOUT_RETRIES"
        if spent >= budget or since >= limits.task.give_up_s:
            return r.ended(Failed(_error_class(r), f"gave up after {spent} retries in "
                                  f"{since:.0f} s ({name} {budget}, "
                                  f"TASK_GIVE_UP_S {limits.task.give_up_s:g}): {_host(r)}"
                                  f"{r.error if r.error is not None else fate.reason}"),
                           r.error)
    return r if fate is r.fate else r.ended(fate, r.error)


def _error_class(r: UnitRun) -> str:
    """The failure's error class: the last error's (NetworkError, ServerError), so failures
    group by what went wrong rather than all under one name."""
    return type(r.error).__name__ if r.error is not None else "PermanentError"


def _host(r: UnitRun) -> str:
    """``host:port: `` of the unit's request, for a reason that names where it failed."""
    netloc = urlsplit(r.request.url).netloc if r.request is not None else ""
    return f"{netloc.rpartition('@')[2]}: " if netloc else ""


def failure(batch: Batch, r: UnitRun) -> Finish:
    """The ledger's finish of a unit failed for good, with its record."""
    assert isinstance(r.fate, Failed)
    step = batch.envelope["step"]
    kept = record(batch, r, r.fate.error, r.fate.message)
    log.info("unit %s of %s failed for good: %s", r.unit["id"], step, kept.reason)
    return Finish(r.unit["id"], step, "failed", failure=kept)


def record(batch: Batch, r: UnitRun, error: str, message: str) -> Failure:
    """What the ledger keeps of a failed or gone unit: params, URL, error, attempts, times."""
    return Failure(
        unit_id=r.unit["id"], step=batch.envelope["step"], params=r.unit["params"],
        error=error, message=message, attempts=r.starts + retries_spent(batch, r.unit),
        first_at=batch.rt.ledger.first_start(batch.job_id, r.unit["id"]),
        failed_at=time.time(), url=redact_url(r.request.full_url) if r.request else "")


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


def _retry_slow_apart(batch: Batch, retry: list[UnitRun]) -> list[UnitRun]:
    """Units that timed out are retried in a message of their own, the rest in this
    message's retry: a unit that hung once mostly hangs again, and a message lasts as long
    as its slowest unit, so a 500 retried beside a hang would wait out the hang at every
    try. Returns the units left for this message's retry."""
    slow = [r for r in retry if isinstance(r.error, TimedOut)]
    if not slow or len(slow) == len(retry):
        return retry
    countdown = backoff(batch, slow)
    batch.rt.ledger.end_attempt(batch.job_id, [r.unit["id"] for r in slow])
    for r in slow:
        carry_retries(r.unit, batch.retries + 1)  # this retry spent, as Celery's would count
    publish_again(batch, [r.unit for r in slow], countdown)
    return [r for r in retry if not isinstance(r.error, TimedOut)]


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


# -- the report -------------------------------------------------------------------
def report(batch: Batch, runs: list[UnitRun], counts: dict[str, int]) -> BatchClosed:
    """What the batch came to, for its observers."""
    return BatchClosed(
        job_id=batch.job_id, chain=batch.chain.name, site=batch.site.name,
        step=batch.envelope["step"], task=batch.step.name,
        units=tuple(unit_closed(batch, r) for r in runs), counts=counts,
        settings=batch.settings.model_dump(mode="json"),
        providers=batch.resources is not None)


def unit_closed(batch: Batch, r: UnitRun) -> UnitClosed:
    """One unit's line of the report."""
    point, leases, bounds = r.fetch, r.leases, r.bounds
    fate = r.fate
    return UnitClosed(
        job_id=batch.job_id, step=batch.envelope["step"], task=batch.step.name,
        unit_id=r.unit["id"], url=redact_url(r.request.full_url) if r.request else "",
        outcome=outcome_of(r), items=fate.items if isinstance(fate, Done) else 0,
        error=fate.error if isinstance(fate, Failed) else
        type(r.error).__name__ if r.error is not None else None,
        reason=fate.message if isinstance(fate, Failed) else getattr(fate, "reason", None),
        change=fate.change if isinstance(fate, Done) else None,
        status=point.status if point else None, nbytes=point.nbytes if point else 0,
        fetch_s=point.seconds if point else None, ended_at=point.ended if point else None,
        retry_after_s=point.retry_after_s if point else None, parse_s=r.parse_s,
        bucket=bounds.bucket if bounds else None, ceiling=bounds.ceiling if bounds else None,
        proxy=leases.proxy if leases else None, need=r.need,
        low=tuple(leases.low) if leases else (), rotated=isinstance(r.error, RotateError))


def outcome_of(r: UnitRun) -> Outcome:
    match r.fate:
        case Done():
            return "done"
        case Unchanged():
            return "unchanged"
        case Skipped():
            return "skipped"
        case Gone():
            return "gone"
        case Failed():
            return "failed"
        case RetryAfter(kind="wait"):
            return "wait"
        case RetryAfter(kind="rotate"):
            return "rotate"
        case _:
            return "retry"
