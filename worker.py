"""The Celery app: settings -> app, one task per declared step, beat's launches, signals.

    celery -A worker worker -Q demo --concurrency 2

The app's options live in ``chains.broker`` (JSON only, late acks with requeue when a
pool child dies, prefetch 1, a Redis visibility timeout above every time limit and
countdown, publishing that rides out a short broker blip). Every step a site declares
(``chains.runtime.registry``) becomes a ``base_task.CrawlTask`` under its name. Each
worker also runs a reviver, which sends again the units a stalled job registered but
the broker lost, and writes its heartbeat with the queues it consumes into the roster
(``chains.runtime.roster``), which a launch reads to refuse a chain no worker would
run. Task events are off, as in Celery, until Flower turns them on.
"""

from __future__ import annotations

import gc
import os
import threading
from typing import Any

from celery import Celery, bootsteps, shared_task
from celery.signals import (
    after_setup_logger,
    after_setup_task_logger,
    beat_init,
    worker_init,
    worker_process_init,
    worker_ready,
)
from celery.utils.log import get_logger

from base_task import CrawlTask, run_step
from chains.broker import session
from chains.broker.app import make_app as bare_app
from chains.broker.dispatch import CeleryDispatch
from chains.broker.options import broker_kind, declare_dead_letter
from chains.broker.view import broker_view
from chains.runtime import registry
from chains.runtime.context import state_redis
from chains.runtime.launch import launch
from chains.runtime.ledger import Ledger
from chains.runtime.registry import chain as get_chain
from chains.runtime.registry import declared_schedules
from chains.runtime.reviver import Reviver, sweep_once
from chains.runtime.roster import BEAT_S, Roster
from chains.runtime.schedule import LAUNCH_TASK, beat_schedule
from config import Settings, get_settings
from utils.logs import redact_handlers, reformat_handlers

log = get_logger(__name__)


def make_app(settings: Settings) -> Celery:
    """The worker's app: the bare app, a task per step, beat's schedule, the reviver."""
    app = bare_app(settings, registry.site_names())
    for name in sorted(registry.steps()):
        app.task(base=CrawlTask, bind=True, name=name)(run_step)
    app.conf.beat_schedule = beat_schedule(declared_schedules())
    app.steps["worker"].add(ReviverStep)
    app.steps["consumer"].add(RosterStep)
    return app


@shared_task(name=LAUNCH_TASK, ignore_result=True)
def launch_chain(name: str, params: dict[str, Any], when_low: str | None = None) -> str:
    """What beat sends: launch a declared chain; returns the job id. With ``when_low``
    ("cookie:demo"), only when that pool is low; "" when it was not."""
    if when_low is not None:
        kind, site = when_low.split(":", 1)
        if not session.current().providers.is_low(kind, site):
            return ""
    return launch(get_chain(name), params, session.current()).job_id


class ReviverStep(bootsteps.StartStopStep):  # type: ignore[misc]
    """Every worker looks for lost units in a thread of its main process; a lock in Redis
    lets one worker of the cluster sweep per interval. The thread builds its own app and
    clients: the pool children forked from this process never share a socket with it."""

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._stopping = threading.Event()

    def start(self, parent: Any) -> None:
        threading.Thread(target=self._run, name="reviver", daemon=True).start()

    def stop(self, parent: Any) -> None:
        self._stopping.set()

    def _run(self) -> None:
        settings = get_settings()
        app = bare_app(settings, registry.site_names())
        interval = settings.revive.interval_s
        reviver = Reviver(CeleryDispatch(app), Ledger(state_redis(settings.state.redis_url)),
                          settings.revive.stall_s)
        while not self._stopping.wait(interval):
            try:
                sweep_once(reviver, interval, lambda: broker_view(app))
            except Exception:  # the broker or Redis is away: try again next time
                log.exception("reviver: sweep failed")


class RosterStep(bootsteps.StartStopStep):  # type: ignore[misc]
    """While the consumer consumes, the worker's heartbeat names its queues in the roster
    (a thread of the main process, every ``BEAT_S``); when it stops, the entry goes. A
    consumer that lost its broker stops and starts again: so does the heartbeat."""

    requires = ("celery.worker.consumer.tasks:Tasks",)

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._stopping: threading.Event | None = None
        self._roster: Roster | None = None

    def start(self, parent: Any) -> None:
        queues = sorted(q.name for q in parent.task_consumer.queues)
        self._stopping = stopping = threading.Event()
        self._roster = roster = Roster(state_redis(get_settings().state.redis_url))

        def beat() -> None:
            while True:
                try:
                    roster.beat(parent.hostname, queues, os.getpid())
                except Exception:  # Redis is away: the next beat tries again
                    log.warning("roster: heartbeat not written", exc_info=True)
                if stopping.wait(BEAT_S):
                    return

        threading.Thread(target=beat, name="roster", daemon=True).start()

    def stop(self, parent: Any) -> None:
        if self._stopping is not None:
            self._stopping.set()
        if self._roster is not None:
            try:
                self._roster.leave(parent.hostname)
            except Exception:  # Redis is away: the entry goes stale by itself
                log.warning("roster: entry not removed", exc_info=True)
            self._roster = None

    shutdown = stop


@after_setup_logger.connect
def _tuned_logs(logger: Any, **_: Any) -> None:
    """``LOG_LEVEL`` and ``LOG_FORMAT=text|json`` for the worker's own lines, secrets
    masked in every one (urllib3 logs request targets, a traceback may quote a proxy)."""
    reformat_handlers(logger)


@after_setup_task_logger.connect
def _no_secrets_in_task_logs(logger: Any, **_: Any) -> None:
    """Task lines keep Celery's format (task name and id), with secrets masked."""
    redact_handlers(logger)


@worker_init.connect
@beat_init.connect
def _serving(**_: Any) -> None:
    """A worker or beat waits ``STATE_CONNECT_WAIT_S`` for a state Redis that starts after
    it; a command gives up after ``STATE_COMMAND_WAIT_S`` (``chains.broker.session``)."""
    session.serve()


@worker_process_init.connect
def _fresh_clients_in_child(**_: Any) -> None:
    """A forked pool child builds its own clients, at once (``session.warm``: not on its
    first message); it never reuses its parent's sockets. What it holds then is frozen
    out of the garbage collector's scans (``gc.freeze``): every full collection would
    walk the app, its tasks, its clients and imports again."""
    session.reset()
    session.warm()
    gc.freeze()


@worker_ready.connect
def _warm_unforked_pool(sender: Any, **_: Any) -> None:
    """A threads or solo pool runs its tasks in this process: its runtime is built now,
    before the first message (a prefork pool's children build their own)."""
    pool = getattr(getattr(sender, "controller", None), "pool_cls", None)
    if pool is not None and "prefork" not in getattr(pool, "__module__", "prefork"):
        session.warm()


@worker_ready.connect
def _declare_dead_letter(sender: Any, **_: Any) -> None:
    """On RabbitMQ, the queue that messages past the delivery limit go to must exist."""
    settings = get_settings()
    if broker_kind(settings.broker.broker_url) == "amqp":
        with sender.app.connection_for_write() as connection:
            declare_dead_letter(connection, settings)


app = make_app(get_settings())
