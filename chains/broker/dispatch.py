"""Sending a step's messages through Celery: the runtime's ``Dispatch`` on a Celery app."""

from __future__ import annotations

from typing import Any, Literal

from celery import Celery

from chains.broker.options import broker_kind
from exceptions import ClusterUnreachable
from utils.urls import redact_url


class CeleryDispatch:
    """``send_task`` by name: a launcher needs no task imported, only the app's routes."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.kind: Literal["redis", "amqp"] = broker_kind(str(app.conf.broker_url))

    def send(self, task: str, args: list[Any], queue: str, priority: int,
             countdown: float | None = None) -> None:
        """Publish one message; the broker has it when this returns (RabbitMQ confirms).
        On RabbitMQ a countdown under a second is one second: Celery's native delayed
        delivery routes by whole seconds and refuses ``0 < countdown < 1`` (kombu's
        ``calculate_routing_key(int(countdown))``), which a wait of 0.3 s for a slot
        would otherwise meet."""
        envelope, units = args
        if self.kind == "amqp" and countdown is not None and 0 < countdown < 1:
            countdown = 1.0
        self.app.send_task(task, args=args, queue=queue, priority=priority,
                           countdown=countdown,
                           argsrepr=f"[{envelope!r}, <{len(units)} units>]",
                           kwargsrepr="{}")  # Celery's saferepr of a batch costs more

    def check_reachable(self, timeout_s: float) -> None:
        """Raise ``ClusterUnreachable`` when the broker does not take a connection within
        ``timeout_s``: a publish would otherwise retry for ``CELERY_PUBLISH_MAX_RETRIES``."""
        url = str(self.app.conf.broker_url)
        try:
            with self.app.connection_for_write() as connection:
                connection.ensure_connection(max_retries=None, interval_start=0.2,
                                             interval_step=0.3, interval_max=1.0,
                                             timeout=timeout_s)
        except Exception as exc:  # kombu raises the transport's own errors
            raise ClusterUnreachable(
                f"the broker at {redact_url(url)} does not answer after {timeout_s:g} s "
                f"({exc}): start the cluster (./control.sh start) or set CELERY_BROKER_URL "
                "to the cluster's", "CELERY_BROKER_URL") from None
