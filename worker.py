"""The Celery app: config -> app, the task base, the site tasks, the signals.

    celery -A worker worker -Q demo --concurrency 2

JSON only; late acks with requeue when a pool child dies (bounded by the ledger's
poison count); prefetch 1; a Redis visibility timeout above every time limit and
countdown; publishing that rides out a short broker blip; a reviver that sends again
the units a stalled job registered but the broker lost. Task events are off, as in
Celery: three broker messages per task that nobody reads, until Flower (which turns
them on while it runs) is started.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import worker_process_init, worker_ready

from chains.schedule import beat_schedule, declared_schedules
from config import Settings, get_settings
from external_interface import resources
from external_interface.reviver import ReviverStep
from utils.brokers import broker_kind, broker_options, declare_dead_letter

SITES = Path(__file__).resolve().parent / "sites"


def site_task_modules() -> list[str]:
    """Every step module under ``sites/<site>/<platform>/<step>.py``."""
    return sorted(
        ".".join(p.relative_to(SITES.parent).with_suffix("").parts)
        for p in SITES.glob("*/*/*.py")
        if p.name != "__init__.py"
    )


def work_queues() -> list[str]:
    """One queue per site (``sites/<site>/``), and ``crawlchain`` for beat's launches."""
    sites = sorted(p.name for p in SITES.iterdir() if p.is_dir() and p.name[0] not in "_.")
    return [*sites, "crawlchain"]


def route_by_site(name: str, args: Any, kwargs: Any, options: Any, **_: Any) -> dict[str, str]:
    """One queue per site: ``demo.h5.feed`` goes to ``demo``."""
    return {"queue": name.split(".", 1)[0]}


def make_app(settings: Settings) -> Celery:
    task = settings.task
    app = Celery("crawlchain", include=[*site_task_modules(), "chains.tasks"])
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
        task_default_queue="crawlchain",
        worker_prefetch_multiplier=1,
        task_send_sent_event=False,
        broker_connection_retry_on_startup=True,
        **broker_options(settings, work_queues()),  # Redis or RabbitMQ: utils/brokers.py
        task_publish_retry=True,
        task_publish_retry_policy={
            "max_retries": settings.broker.publish_max_retries,
            "interval_start": 0.2, "interval_step": 0.5, "interval_max": 3.0,
        },
        beat_schedule=beat_schedule(declared_schedules()),
    )
    app.steps["worker"].add(ReviverStep)  # units the broker lost are sent again
    return app


@worker_process_init.connect
def _fresh_clients_in_child(**_: Any) -> None:
    """A forked pool child builds its own clients; it never reuses its parent's sockets."""
    resources.reset()


@worker_ready.connect
def _declare_dead_letter(sender: Any, **_: Any) -> None:
    """On RabbitMQ, the queue that messages past the delivery limit go to must exist."""
    settings = get_settings()
    if broker_kind(settings.broker.broker_url) == "amqp":
        with sender.app.connection_for_write() as connection:
            declare_dead_letter(connection, settings)


app = make_app(get_settings())
