"""CrawlTask: the Celery task every site step runs as, a thin adapter around the runtime.

A message is ``[envelope, units]``; ``chains.runtime.message.run_message`` runs it
through the phases and says what is left to retry, which this adapter hands to
Celery's own ``retry`` (a new message, after the backoff the runtime chose). Late
acks with requeue when a pool child dies; a message whose state plane or broker is
away goes back to the queue (``Reject(requeue=True)``) instead of failing its units;
a message that dies (the hard time limit, a bug) has its unfinished units sent again.

``worker.py`` registers one of these per declared step, under the step's name
(``run_step``); the site writes no Celery code. Nothing request-specific lives on ``self``: one task
instance serves a whole process.
"""

from __future__ import annotations

import time
from contextlib import suppress
from typing import Any

import redis
from celery import Task
from celery.exceptions import Reject
from celery.utils.log import get_task_logger
from kombu.exceptions import OperationalError

from chains.broker.session import current
from chains.runtime.message import record_raise, requeue_unfinished, run_message
from chains.runtime.units import Envelope, Unit

log = get_task_logger(__name__)

INFRASTRUCTURE_ERRORS = (redis.ConnectionError, redis.TimeoutError, OperationalError)


class CrawlTask(Task):  # type: ignore[misc]  # Celery ships no type hints
    """Base task of every site step; the task's name is the step's."""

    acks_late = True
    reject_on_worker_lost = True
    ignore_result = True
    typing = False  # params are validated by the step's input model, not the signature

    def run_units(self, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
        """Run a batch of units of this step; retry only the ones that failed transiently."""
        try:
            outcome = run_message(current(), self.name, envelope, units,
                                  int(self.request.retries or 0))
        except INFRASTRUCTURE_ERRORS as exc:
            log.warning("state plane or broker unavailable (%s); requeueing the message", exc)
            time.sleep(2.0)
            with suppress(*INFRASTRUCTURE_ERRORS):  # the state plane may be back by now
                record_raise(current(), envelope, units, exc)
            raise Reject(str(exc), requeue=True) from exc
        if outcome.retry is not None:
            raise self.retry(args=[envelope, outcome.retry.units],
                             countdown=outcome.retry.countdown,
                             max_retries=current().settings.task.max_retries)
        return dict(outcome.counts)

    def on_failure(self, exc: BaseException, task_id: str, args: tuple[Any, ...],
                   kwargs: dict[str, Any], einfo: Any) -> None:
        """The message died (hard time limit, a bug in the loop): requeue its units."""
        if len(args) != 2 or isinstance(exc, Reject):
            return
        envelope, units = args
        sent = requeue_unfinished(current(), envelope, units, exc)
        log.error("message %s of %s died (%r); requeued %d units", task_id, self.name, exc,
                  sent)


def run_step(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """The body of every step's task (``app.task(base=CrawlTask, bind=True)``)."""
    return self.run_units(envelope, units)
