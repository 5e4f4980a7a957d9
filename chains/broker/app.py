"""The Celery app, configured but bare: no task registered here.

``worker.py`` adds a task per site step; a launcher (a shell, the CLI, beat) needs
only this much to publish: JSON only, late acks, per-site queues, publishing that
rides out a short broker blip, and the broker's own options (``options``).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from celery import Celery
from celery.exceptions import SoftTimeLimitExceeded

from chains.broker import redis_transport
from chains.broker.options import broker_options
from config import Settings

DEFAULT_QUEUE = "crawlchain"  # beat's launches, and anything not routed to a site

# What a worker raises into a running task to stop it: the runtime lets these through
# site code untouched (a soft time limit is not a parser's bug).
INTERRUPTS: tuple[type[BaseException], ...] = (SoftTimeLimitExceeded,)


def route_by_site(name: str, args: Any, kwargs: Any, options: Any, **_: Any) -> dict[str, str]:
    """One queue per site: ``demo.h5.feed`` goes to ``demo``."""
    return {"queue": name.split(".", 1)[0]}


def make_app(settings: Settings, queues: Iterable[str] = ()) -> Celery:
    """The app for ``settings``; ``queues`` are the work queues (a RabbitMQ broker
    declares them with their type and dead-lettering)."""
    task = settings.task
    redis_transport.install()  # a worker survives a reconnection kombu 5.7 would crash
    app = Celery("crawlchain", set_as_current=False)
    app.conf.update(
        broker_url=settings.broker.broker_url,
        task_serializer="json",
        accept_content=["json"],
        result_accept_content=["json"],
        task_ignore_result=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        task_soft_time_limit=task.soft_time_limit_s,
        task_time_limit=task.time_limit_s,
        task_routes=(route_by_site,),
        task_default_queue=DEFAULT_QUEUE,
        worker_prefetch_multiplier=1,
        task_send_sent_event=False,
        broker_connection_retry_on_startup=True,
        **broker_options(settings, [*queues, DEFAULT_QUEUE]),
        task_publish_retry=True,
        task_publish_retry_policy={
            "max_retries": settings.broker.publish_max_retries,
            "interval_start": 0.2, "interval_step": 0.5, "interval_max": 3.0,
        },
    )
    return app
