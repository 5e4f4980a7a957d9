"""Sending a step's messages through Celery, on the real brokers."""

from __future__ import annotations

import pytest
from kombu.transport.native_delayed_delivery import (
    bind_queue_to_native_delayed_delivery_exchange,
    declare_native_delayed_delivery_exchanges_and_queues,
)

from chains.broker.dispatch import CeleryDispatch
from tests.chains.broker.test_options import poll, settings_for
from worker import make_app


@pytest.mark.parametrize("countdown", [0.3, 1.5])
def test_a_countdown_under_a_second_reaches_the_queue_on_rabbitmq(
        monkeypatch: pytest.MonkeyPatch, amqp_url: str, countdown: float) -> None:
    """Celery's native delayed delivery routes by whole seconds and refused a 0.3 s wait
    for a slot: the message died there, and with it a page its list had not sent."""
    app = make_app(settings_for(monkeypatch, amqp_url))
    with app.connection_for_write() as connection:
        declare_native_delayed_delivery_exchanges_and_queues(connection, "quorum")
        queue = app.amqp.queues["demo"](connection.default_channel)
        queue.declare()
        bind_queue_to_native_delayed_delivery_exchange(connection, queue)
        CeleryDispatch(app).send("demo.h5.feed", [{"job": "j", "step": "feed", "depth": 0},
                                                  [{"id": "u", "params": {}, "page": 0}]],
                                 "demo", 5, countdown=countdown)
        message = poll(queue, timeout=10)
    assert message.headers["task"] == "demo.h5.feed"
