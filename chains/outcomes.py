"""How a batch ends: finished, failed for good, retried, deferred, rotated.

The close phase of ``base_task.CrawlTask``, kept apart from the phases that fetch
and store: one atomic ledger call finishes the batch's units with its per-step
statistics, one round trip writes its metrics, and whatever did not end goes back
to the queue: at once on a fresh resource, after a countdown for a slot or a pool
(neither spends a retry), or through Celery's ``retry`` with backoff.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from functools import lru_cache
from typing import TYPE_CHECKING

from celery import Task
from celery.utils.log import get_task_logger

from chains.engine import Envelope, Publisher, Unit
from chains.model import Chain
from exceptions import CrawlError, PermanentError, RateLimited, RotateError
from external_interface import recrawl
from external_interface.ledger import Carry, Failure, Finish
from external_interface.providers.task import close_batch, resource_counts, spend_rotations
from external_interface.resources import current
from monitor.metrics import Metrics, Tally
from utils.units import Work

if TYPE_CHECKING:
    from external_interface.resources import Resources

log = get_task_logger(__name__)


class BatchOutcomes(Task):
    """The base task's close phase; needs the task's ``name``, ``request`` and ``retry``."""

    def _close(self, res: Resources, envelope: Envelope, batch: list[Work],
               carry: Carry | None = None) -> dict[str, int]:
        """Mark, finish and count the batch, recording what its message carries on to
        (``Ledger.finish_many``); retry what is left (raises Celery's Retry)."""
        job_id, step = envelope["job"], envelope["step"]
        deferred = [w for w in batch if w.defer is not None]
        retry = [w for w in batch if not (w.ready and w.error is None) and w.defer is None
                 and not isinstance(w.error, PermanentError)]
        spent = resource_counts(batch)  # before a last ban turns into RotationsSpent
        rotate = spend_rotations(res, retry)  # burnt resource: again at once, on a fresh one
        retry = [w for w in retry if w not in rotate and not isinstance(w.error, PermanentError)]
        given_up = self._give_up(res, retry)
        failed = [w for w in batch if isinstance(w.error, PermanentError)]
        finished = [w for w in batch if w.ready and w.error is None]
        recrawl.mark(res.dedup, [w.recrawl for w in finished if w.recrawl is not None])
        ends = [Finish(w.unit["id"], step, w.end.outcome, w.end.items)
                for w in finished if w.end is not None]
        retry = [w for w in retry if w not in given_up]
        spent.update(requests=sum(w.fetched for w in batch), rotations=len(rotate))
        res.ledger.finish_many(
            job_id, ends + [self._failure(res, envelope, w) for w in failed],
            res.ledger.step_counts(step, {
                "retried": len(retry), **spent,
                "unchanged": sum(1 for w in finished if w.end is not None and w.end.unchanged)}),
            carry)
        Metrics(res.redis).send(batch_tally(self.name, batch, ends, failed, retry, rotate),
                                job_id)
        if deferred or rotate:
            self._defer(res, envelope, deferred, rotate)
        if batch and batch[0].gear is not None:
            close_batch(res, envelope, batch, spent)
        if retry:
            self._retry(res, envelope, retry)
        tally = {o: sum(1 for e in ends if e.outcome == o) for o in ("done", "skipped")}
        return {**tally, "failed": len(failed), "retry": len(retry)}

    def _defer(self, res: Resources, envelope: Envelope, deferred: list[Work],
               rotate: list[Work]) -> None:
        """Units that must wait (for their site's slot, for a pool) go back with a countdown,
        units whose resource was burnt at once; neither spends a retry."""
        res.ledger.end_attempt(envelope["job"], [w.unit["id"] for w in deferred + rotate])
        if rotate:
            publish_again(res, envelope, [w.unit for w in rotate])
        if deferred:
            publish_again(res, envelope, [w.unit for w in deferred],
                          countdown=max(w.defer or 0.0 for w in deferred))

    def _give_up(self, res: Resources, retry: list[Work]) -> list[Work]:
        """Past ``max_retries`` the units fail for good, with the last error in the reason."""
        limit = res.settings.task.max_retries
        if self.request.retries < limit:
            return []
        for w in retry:
            last = w.error.reason if w.error else "interrupted before it finished"
            w.error = PermanentError(f"gave up after {limit} retries: {last}")
        return list(retry)

    def _failure(self, res: Resources, envelope: Envelope, w: Work) -> Finish:
        assert w.error is not None
        step = envelope["step"]
        failure = Failure(
            unit_id=w.unit["id"], step=step, params=w.unit["params"],
            error=type(w.error).__name__, message=str(w.error),
            attempts=w.starts + self.request.retries,
            first_at=res.ledger.first_start(envelope["job"], w.unit["id"]), failed_at=time.time(),
        )
        log.info("unit %s of %s failed for good: %s", w.unit["id"], step, failure.reason)
        return Finish(w.unit["id"], step, "failed", failure=failure)

    def _retry(self, res: Resources, envelope: Envelope, retry: list[Work]) -> None:
        """One new message for the units to retry, after a backoff (Retry-After wins)."""
        res.ledger.end_attempt(envelope["job"], [w.unit["id"] for w in retry])
        errors = [w.error for w in retry if w.error is not None]
        raise self.retry(args=[envelope, [w.unit for w in retry]],
                         countdown=self._backoff(res, errors),
                         max_retries=res.settings.task.max_retries)

    def _backoff(self, res: Resources, errors: list[CrawlError]) -> float:
        """Exponential backoff with full jitter; a longer Retry-After wins, capped."""
        policy = res.settings.task
        delay = backoff_s(policy.backoff_base_s, self.request.retries, policy.backoff_max_s)
        advised = [e.retry_after for e in errors if isinstance(e, RateLimited) and e.retry_after]
        return min(max([delay, *advised]), policy.backoff_max_s)


def batch_tally(task_name: str, batch: list[Work], ends: list[Finish], failed: list[Work],
                retry: list[Work], rotate: list[Work]) -> Tally:
    """The batch's points for the cluster-wide metrics: fetches, parses, items stored,
    outcomes (the ledger stays the exact count)."""
    tally = Tally(task_name).started(len(batch))
    for w in batch:
        if w.fetch is not None:
            tally.fetched(w.fetch.status, w.fetch.nbytes, w.fetch.seconds)
        if w.parse_s is not None:
            tally.parsed(w.parse_s)
    tally.stored(sum(e.items for e in ends))
    outcomes: dict[str, int] = {**Counter(e.outcome for e in ends), "failed": len(failed)}
    tally.units_finished(outcomes, Counter(type(w.error).__name__ for w in failed))
    return tally.retried(len(retry) + len(rotate), rotated=len(rotate) + sum(
        isinstance(w.error, RotateError) for w in retry))


def publish_again(res: Resources, envelope: Envelope, units: list[Unit],
                  countdown: float | None = None) -> None:
    """Send units of the envelope's step back to the queue in new messages."""
    Publisher(res.app, res.ledger).publish(chain_of(envelope["job"]), envelope["job"],
                                           envelope["step"], units, envelope["depth"],
                                           countdown=countdown)


def backoff_s(base_s: float, retries: int, max_s: float) -> float:
    """Full-jitter exponential backoff in floats (Celery's helper takes whole seconds only:
    it calls ``randrange`` and fails on a base of 0.2 s)."""
    return random.uniform(0.0, min(max_s, base_s * 2 ** retries))


@lru_cache(maxsize=256)
def chain_of(job_id: str) -> Chain:
    """The chain a job runs, as stored at launch; cached per process."""
    return Chain.model_validate(current().ledger.chain_of(job_id))
