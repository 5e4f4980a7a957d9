"""The Redis transport: a channel closed after its connection was torn down (a broker
killed under a worker) leaves its unacked messages for later instead of crashing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import redis
from kombu.connection import Connection
from kombu.entity import Queue

from chains.broker import redis_transport


def held_message_then_torn_down(url: str) -> Any:
    """A channel holding one delivered, unacked message, whose transport has lost its
    connection info, as Celery leaves it when the broker goes away."""
    conn = Connection(url)  # type: ignore[no-untyped-call]
    queue = Queue("torn", routing_key="torn")  # type: ignore[no-untyped-call]
    with conn.Producer() as producer:  # type: ignore[no-untyped-call]
        producer.publish({"n": 1}, routing_key="torn", declare=[queue])
    channel = conn.default_channel
    assert queue(channel).get(no_ack=False) is not None  # type: ignore[no-untyped-call]
    conn.transport.client = None
    return channel


def test_a_torn_down_channel_closes_and_its_message_stays_unacked(
        redis_socket: Path, redis_client: redis.Redis) -> None:
    db = redis_client.connection_pool.connection_kwargs["db"]
    url = f"redis+socket://{redis_socket}?virtual_host={db}"
    redis_transport.install("kombu.transport.redis:Transport")  # kombu's own
    try:
        with pytest.raises(AttributeError, match="hostname"):
            held_message_then_torn_down(url).close()
    finally:
        redis_transport.install()
    channel = held_message_then_torn_down(url)
    assert isinstance(channel, redis_transport.Channel)
    channel.close()  # the worker lives on
    assert redis_client.hlen("unacked") == 2  # both messages wait for restore_visible


def test_install_routes_every_redis_scheme_to_the_transport() -> None:
    redis_transport.install()
    for url in ("redis://127.0.0.1:1/0", "redis+socket:///tmp/none.sock"):
        connection = Connection(url)  # type: ignore[no-untyped-call]
        assert isinstance(connection.transport, redis_transport.Transport)
