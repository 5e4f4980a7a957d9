"""The Redis transport: a channel whose connection was torn down (a broker killed under a
worker) still restores and acks its messages, where kombu's own crashes the worker."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from kombu.connection import Connection
from kombu.entity import Queue

from chains.broker import redis_transport


def held_message_then_torn_down(url: str) -> tuple[Any, Any]:
    """A channel holding one delivered, unacked message, whose transport has lost its
    connection info, as Celery leaves it when the broker goes away; and the message."""
    conn = Connection(url)  # type: ignore[no-untyped-call]
    queue = Queue("torn", routing_key="torn")  # type: ignore[no-untyped-call]
    with conn.Producer() as producer:  # type: ignore[no-untyped-call]
        producer.publish({"n": 1}, routing_key="torn", declare=[queue])
    channel: Any = conn.default_channel
    message = queue(channel).get(no_ack=False)  # type: ignore[no-untyped-call]
    assert message is not None
    channel._disconnect_pools()  # the teardown: its clients gone with the connection info
    conn.transport.client = None
    return channel, message


@pytest.fixture
def url(redis_socket: Path, redis_client: redis.Redis) -> str:
    db = redis_client.connection_pool.connection_kwargs["db"]
    return f"redis+socket://{redis_socket}?virtual_host={db}"


def test_kombus_own_channel_crashes_on_closing_and_acking_after_the_teardown(
        url: str) -> None:
    redis_transport.install("kombu.transport.redis:Transport")
    try:
        channel, message = held_message_then_torn_down(url)
        with pytest.raises(AttributeError, match="hostname"):
            message.ack()
        with pytest.raises(AttributeError, match="hostname"):
            channel.close()
    finally:
        redis_transport.install()


def test_a_torn_down_channel_gives_its_unacked_message_back_at_once(
        url: str, redis_client: redis.Redis) -> None:
    channel, _ = held_message_then_torn_down(url)
    assert isinstance(channel, redis_transport.Channel)
    channel.close()  # the worker lives on
    assert redis_client.hlen("unacked") == 0
    assert redis_client.llen("torn") == 1  # back in its queue, not waiting for a timeout


def test_a_task_finishing_after_the_teardown_acks_its_message(
        url: str, redis_client: redis.Redis) -> None:
    _, message = held_message_then_torn_down(url)
    message.ack()
    assert redis_client.hlen("unacked") == 0 and redis_client.llen("torn") == 0


def test_install_routes_every_redis_scheme_to_the_transport() -> None:
    redis_transport.install()
    for url in ("redis://127.0.0.1:1/0", "redis+socket:///tmp/none.sock"):
        connection = Connection(url)  # type: ignore[no-untyped-call]
        assert isinstance(connection.transport, redis_transport.Transport)
