"""Broker-specific Celery options: what each broker needs to keep the brief's promises.

Celery's options for one broker are ignored, or wrong, on the other, so ``worker.py``
takes them from here by the broker URL's scheme:

Redis (``redis://``, ``rediss://``, ``redis+socket://``): a visibility timeout above
every time limit and countdown, a fast sweep for a dead host's unacked messages,
priority steps (lower numbers first), and a socket timeout with health checks, so a
half-open connection to a frozen or vanished broker is dropped and made again instead
of blocking a worker for good (celery/celery#8082).

RabbitMQ (``amqp://``, ``amqps://``, ``pyamqp://``):

- publisher confirms (``confirm_publish``): a publish returns once the broker has the
  message, so a child is never registered in the ledger and then lost in flight;
- one durable queue per site (and ``crawlchain`` for beat's launches) on a topic
  exchange of its name, so Celery's native delayed delivery holds countdowns (retries,
  politeness) in the broker, not in a worker's memory;
- ``CELERY_QUEUE_TYPE=quorum`` (default): replicated queues with a delivery limit
  (``2 x TASK_MAX_DELIVERIES``, above the ledger's own poison count so the ledger, which
  records a reason, acts first) and at-least-once dead-lettering to ``crawlchain.dead``;
  RabbitMQ before 4.0 ignores message priorities on them. ``classic``: x-max-priority 9
  (deeper units first, as on Redis), dead-lettering of rejected messages, no delivery
  limit. A queue named by a ``Step.queue`` that is not a site gets the type but not the
  limit. Changing the type of an existing queue needs the queue deleted (or a new vhost);
- heartbeats on (``CELERY_BROKER_HEARTBEAT``): a cut-off host's connection is closed, its
  unacked units requeued; and running units are cancelled when a worker loses its
  connection, since the broker has already given them to another worker;
- the consumer timeout is the server's ``consumer_timeout`` (30 min by default, above
  ``TASK_TIME_LIMIT_S``); per-queue ``x-consumer-timeout`` needs RabbitMQ 3.12, so it is
  not declared and one declaration works on 3.10 as on 3.13;
- ``amqps://``: TLS with the server's certificate verified (``AMQP_TLS_*`` name the CA,
  and a client certificate if the server asks for one).

``rediss://`` (either broker): the server's certificate verified against
``REDIS_TLS_CA_FILE``, and this host's own when ``REDIS_TLS_CERT_FILE`` names one
(``broker_use_ssl``: kombu would otherwise connect without checking the server).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from kombu.entity import Exchange, Queue

from config import Settings

DEAD_LETTER = "crawlchain.dead"
REDIS_SCHEMES = frozenset({"redis", "rediss", "redis+socket", "sentinel"})
AMQP_SCHEMES = frozenset({"amqp", "amqps", "pyamqp"})


def broker_kind(url: str) -> Literal["redis", "amqp"]:
    """Which broker a URL names; any other transport is refused by name."""
    scheme = url.partition("://")[0].lower()
    if scheme in REDIS_SCHEMES:
        return "redis"
    if scheme in AMQP_SCHEMES:
        return "amqp"
    raise ValueError(f"CELERY_BROKER_URL scheme {scheme!r} is not supported: use redis://, "
                     "rediss://, redis+socket:// or amqp://")


def broker_options(settings: Settings, queues: Iterable[str]) -> dict[str, Any]:
    """Celery options for the configured broker; ``queues`` are the work queues' names."""
    if broker_kind(settings.broker.broker_url) == "redis":
        return redis_options(settings)
    return amqp_options(settings, queues)


def redis_options(settings: Settings) -> dict[str, Any]:
    """Redis transport options: unacked messages come back after the visibility timeout."""
    visibility = settings.broker.visibility_timeout
    scheme = settings.broker.broker_url.partition("://")[0].lower()
    return {**({"broker_use_ssl": settings.redis_tls.options()} if scheme == "rediss" else {}),
            "broker_transport_options": {
        "visibility_timeout": visibility,
        # kombu sweeps for abandoned messages every interval x throttle seconds
        # (100 s by default): a dead host's units come back soon after the timeout.
        "unacked_restore_interval": max(1, min(10, visibility // 10)),
        "unacked_restore_throttle": 1,
        # A worker killed while it held the restore lock blocks every other worker's
        # restores until the lock expires (300 s by default); a pass takes milliseconds.
        "unacked_mutex_expire": 10,
        "socket_timeout": settings.broker.broker_socket_timeout,
        "socket_connect_timeout": settings.broker.broker_socket_timeout,
        "health_check_interval": settings.broker.broker_health_check_interval,
        "priority_steps": list(range(10)),
        "sep": ":",
        "queue_order_strategy": "priority",
    }}


def amqp_options(settings: Settings, queues: Iterable[str]) -> dict[str, Any]:
    """RabbitMQ: confirms, durable typed queues with dead-lettering, heartbeats."""
    queue_type = settings.broker.queue_type
    scheme = settings.broker.broker_url.partition("://")[0].lower()
    return {
        **({"broker_use_ssl": settings.amqp_tls.options()} if scheme == "amqps" else {}),
        "broker_transport_options": {"confirm_publish": True},
        "broker_heartbeat": settings.broker.broker_heartbeat,
        "worker_cancel_long_running_tasks_on_connection_loss": True,
        "task_queues": [work_queue(name, settings) for name in queues],
        "task_default_exchange_type": "topic",
        "task_default_queue_type": queue_type,
        "task_create_missing_queue_type": queue_type,
        "task_create_missing_queue_exchange_type": "topic",
        "task_queue_max_priority": 9 if queue_type == "classic" else None,
        "worker_detect_quorum_queues": True,  # per-consumer prefetch: no global QoS
    }


def work_queue(name: str, settings: Settings) -> Queue:
    """A durable site queue on a topic exchange of its name (native delayed delivery)."""
    return Queue(name, Exchange(name, type="topic", durable=True), routing_key=name,
                 durable=True, queue_arguments=queue_arguments(settings))


def queue_arguments(settings: Settings) -> dict[str, Any]:
    """The declaration arguments of a work queue for the configured queue type."""
    dead = {"x-dead-letter-exchange": DEAD_LETTER}
    if settings.broker.queue_type == "classic":
        return {**dead, "x-max-priority": 9}
    return {
        **dead,
        "x-queue-type": "quorum",
        "x-delivery-limit": 2 * settings.task.max_deliveries,
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",  # required by at-least-once dead-lettering
    }


def dead_letter_queue(settings: Settings) -> Queue:
    """Where RabbitMQ puts messages past the delivery limit or rejected for good; kept
    for inspection (``rabbitmqadmin get queue=crawlchain.dead``), consumed by nobody."""
    args = {"x-queue-type": "quorum"} if settings.broker.queue_type == "quorum" else {}
    return Queue(DEAD_LETTER, Exchange(DEAD_LETTER, type="fanout", durable=True),
                 durable=True, queue_arguments=args)


def declare_dead_letter(connection: Any, settings: Settings) -> None:
    """Declare the dead-letter exchange and queue on ``connection`` (a kombu
    Connection); idempotent, so every worker does it when it starts."""
    dead_letter_queue(settings)(connection.default_channel).declare()
