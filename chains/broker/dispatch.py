"""Sending a step's messages through Celery: the runtime's ``Dispatch`` on a Celery app."""

from __future__ import annotations

from typing import Any, Literal

from celery import Celery

from chains.broker.options import broker_kind


class CeleryDispatch:
    """``send_task`` by name: a launcher needs no task imported, only the app's routes."""

    def __init__(self, app: Celery) -> None:
        self.app = app
        self.kind: Literal["redis", "amqp"] = broker_kind(str(app.conf.broker_url))

    def send(self, task: str, args: list[Any], queue: str, priority: int,
             countdown: float | None = None) -> None:
        """Publish one message; the broker has it when this returns (RabbitMQ confirms)."""
        envelope, units = args
        self.app.send_task(task, args=args, queue=queue, priority=priority,
                           countdown=countdown,
                           argsrepr=f"[{envelope!r}, <{len(units)} units>]",
                           kwargsrepr="{}")  # Celery's saferepr of a batch costs more
