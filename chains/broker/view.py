"""What a Redis broker holds, read from kombu's layout, for the reviver.

kombu keeps one list per queue and priority, and one hash of delivered, unacked
messages. A message's body is Celery's ``[args, kwargs, embed]``; a crawl step's
args are ``[envelope, units]``. RabbitMQ cannot be read this way, and needs no
reviver: a delivered message stays on the server until it is acked.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any

import redis
from celery import Celery

from chains.broker.options import broker_kind

SCAN_CHUNK = 1000


class RedisBrokerView:
    """Ids of a job's units in the queues and in the unacked hash (``BrokerView``)."""

    def __init__(self, client: redis.Redis, unacked_key: str,
                 queue_keys: Callable[[str], list[str]]) -> None:
        self.client = client
        self.unacked_key = unacked_key
        self.queue_keys = queue_keys  # queue name -> its list keys, one per priority

    def held_units(self, job_id: str, queues: Iterable[str]) -> set[str] | None:
        held: set[str] = set()
        for queue in sorted(set(queues)):
            for key in dict.fromkeys(self.queue_keys(queue)):
                held |= units_of(job_id, self._list(key))
        unacked = (json.loads(raw)[0] for raw in self.client.hvals(self.unacked_key))
        return held | units_of(job_id, unacked)

    def _list(self, key: str) -> Iterator[dict[str, Any]]:
        start = 0
        while chunk := self.client.lrange(key, start, start + SCAN_CHUNK - 1):
            yield from (json.loads(raw) for raw in chunk)
            start += SCAN_CHUNK


@contextmanager
def broker_view(app: Celery) -> Iterator[RedisBrokerView | None]:
    """A view of ``app``'s broker for one sweep, or None when the broker is not Redis."""
    if broker_kind(str(app.conf.broker_url)) != "redis":
        yield None
        return
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        steps = sorted(set(channel.priority_steps))
        yield RedisBrokerView(channel.client, channel.unacked_key,
                              lambda q: [channel._q_for_pri(q, p) for p in steps])


def units_of(job_id: str, messages: Iterable[dict[str, Any]]) -> set[str]:
    """Unit ids of ``job_id`` in kombu messages whose body is ``[[envelope, units], ...]``."""
    out: set[str] = set()
    for message in messages:
        try:
            body = message["body"]
            if message.get("properties", {}).get("body_encoding") == "base64":
                body = base64.b64decode(body)
            args = json.loads(body)[0]
            if isinstance(args[0], dict) and args[0].get("job") == job_id:
                out.update(unit["id"] for unit in args[1])
        except (KeyError, IndexError, TypeError, ValueError):
            continue  # not a crawl step's message (a beat launch, a control message)
    return out
