"""Each broker gets the options that keep its promises, and only those; on the real
RabbitMQ a message past the delivery limit lands in the dead-letter queue."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest

from chains.broker.options import (
    DEAD_LETTER,
    broker_kind,
    broker_options,
    dead_letter_queue,
    declare_dead_letter,
)
from chains.runtime.registry import site_names
from config import Settings
from tests.conftest import amqp_unreachable, rabbitmqctl
from worker import make_app

AMQP = "amqp://guest:guest@127.0.0.1:5672//"


def settings_for(monkeypatch: pytest.MonkeyPatch, url: str, **env: str) -> Settings:
    monkeypatch.setenv("CELERY_BROKER_URL", url)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return Settings()


def test_broker_kind_follows_the_url_scheme_and_refuses_others() -> None:
    assert broker_kind("redis+socket:///tmp/r.sock") == "redis"
    assert broker_kind("rediss://:pw@h:6380/0") == "redis"
    assert broker_kind("amqp://u:pw@h:5672/vhost") == "amqp"
    assert broker_kind("pyamqp://h//") == "amqp"
    with pytest.raises(ValueError, match="'sqs' is not supported"):
        broker_kind("sqs://key:secret@")


def test_redis_transport_options_apply_to_redis_urls_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    redis_conf = make_app(settings_for(monkeypatch, "redis://127.0.0.1:1/0")).conf
    assert redis_conf.broker_transport_options["visibility_timeout"] == 900
    amqp_conf = make_app(settings_for(monkeypatch, AMQP)).conf
    assert amqp_conf.broker_transport_options == {"confirm_publish": True}
    assert redis_conf.task_queues is None  # Redis keeps Celery's queues as they were
    assert not redis_conf.worker_cancel_long_running_tasks_on_connection_loss  # a blip is
    # not a redelivery on Redis: the unit finishes and is acked after reconnecting


def test_rabbitmq_has_confirms_heartbeats_and_cancels_units_on_connection_loss(
        monkeypatch: pytest.MonkeyPatch) -> None:
    conf = make_app(settings_for(monkeypatch, AMQP, CELERY_BROKER_HEARTBEAT="20")).conf
    assert conf.broker_transport_options["confirm_publish"] is True
    assert conf.broker_heartbeat == 20
    assert conf.worker_cancel_long_running_tasks_on_connection_loss is True


def test_quorum_queues_by_default_with_a_delivery_limit_above_the_ledgers_and_a_dead_letter(
        monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_for(monkeypatch, AMQP)
    work_queues = [*site_names(), "crawlchain"]
    queues = broker_options(settings, work_queues)["task_queues"]
    assert [q.name for q in queues] == work_queues
    for queue in queues:
        args = queue.queue_arguments
        assert args["x-queue-type"] == "quorum" and queue.durable
        assert args["x-delivery-limit"] > settings.task.max_deliveries
        assert args["x-dead-letter-exchange"] == DEAD_LETTER
        assert queue.exchange.type == "topic"  # native delayed delivery needs it
        assert "x-max-priority" not in args  # quorum queues refuse it before 4.0


def test_classic_queues_keep_message_priorities(monkeypatch: pytest.MonkeyPatch) -> None:
    settings = settings_for(monkeypatch, AMQP, CELERY_QUEUE_TYPE="classic")
    conf = make_app(settings).conf
    for queue in conf.task_queues:
        assert queue.queue_arguments["x-max-priority"] == 9
        assert "x-queue-type" not in queue.queue_arguments
    assert conf.task_queue_max_priority == 9  # a Step.queue's own queue too


def test_an_unknown_queue_type_is_refused_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="CELERY_QUEUE_TYPE='stream'"):
        settings_for(monkeypatch, AMQP, CELERY_QUEUE_TYPE="stream")


def test_a_message_past_the_delivery_limit_is_dead_lettered_not_dropped(
        monkeypatch: pytest.MonkeyPatch, amqp_url: str) -> None:
    settings = settings_for(monkeypatch, amqp_url, TASK_MAX_DELIVERIES="1")
    app = make_app(settings)
    with app.connection_for_write() as connection:
        declare_dead_letter(connection, settings)
        queue = app.amqp.queues["demo"](connection.default_channel)
        queue.declare()
        with connection.Producer() as producer:
            producer.publish({"unit": "poison"}, exchange=queue.exchange, routing_key="demo")
        deliveries = reject_until_gone(queue, limit=10)
        dead = dead_letter_queue(settings)(connection.default_channel)
        message = poll(dead, timeout=5)
    assert deliveries == 2 * settings.task.max_deliveries + 1
    assert message.payload == {"unit": "poison"}
    assert message.headers["x-death"][0]["reason"] == "delivery_limit"


def reject_until_gone(queue: Any, limit: int) -> int:
    """Take the queue's message and requeue it until the broker stops delivering it."""
    count = 0
    for _ in range(limit):
        message = poll(queue, timeout=2, allow_none=True)
        if message is None:
            return count
        count += 1
        message.reject(requeue=True)
    return count


def poll(queue: Any, timeout: float, allow_none: bool = False) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = queue.get(no_ack=False)
        if message is not None:
            return message
        time.sleep(0.05)
    if allow_none:
        return None
    raise TimeoutError(f"nothing arrived in {timeout}s")


def test_the_brokers_consumer_timeout_exceeds_the_hard_time_limit() -> None:
    """RabbitMQ 3.10 has no per-queue consumer timeout: the server-wide one must hold a
    unit's message for its whole time limit, or the broker closes the channel mid-unit."""
    reason = amqp_unreachable()
    if reason:
        pytest.skip(reason)
    answer = rabbitmqctl("eval", "application:get_env(rabbit, consumer_timeout).")
    match = re.search(r"\{ok,(\d+)\}", answer)
    timeout_s = int(match.group(1)) / 1000 if match else float("inf")  # undefined: none
    assert timeout_s > Settings().task.time_limit_s
