"""The state plane for reading jobs, even when the embedded Redis is stopped.

``crawlchain jobs`` and the monitor read the ledger after ``./control.sh demo`` has
stopped everything: a stopped embedded Redis is read from a throwaway copy of its files.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import redis

from config import embedded_socket
from ops.embedded_redis import stopped_copy
from utils.urls import redact_url


class StateUnavailable(RuntimeError):
    """The state Redis does not answer, and there are no files of it to read instead."""


@contextmanager
def state_for_reading(url: str) -> Iterator[tuple[redis.Redis, str | None]]:
    """A client of the state Redis to read jobs from, and None; or, when it is the
    embedded Redis and it is stopped (``./control.sh demo`` stops it on exit), a client
    of a throwaway copy of its files and a line saying so. Anything else that does not
    answer raises ``StateUnavailable`` saying what to do."""
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=15)
    try:
        client.ping()
        reachable: Exception | None = None
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        client.close()
        reachable = exc
    if reachable is None:
        with client:
            yield client, None
        return
    data = embedded_socket().parent / "redis"
    if url != f"unix://{embedded_socket()}" or not (data / "appendonlydir").is_dir():
        raise StateUnavailable(
            f"the state Redis at {redact_url(url)} does not answer ({reachable}): start it "
            "(./control.sh start redis) or point STATE_REDIS_URL at the cluster's")
    with stopped_copy(data) as socket, redis.Redis(unix_socket_path=socket) as copy:
        yield copy, (f"the embedded Redis is stopped: read from its files in {data} "
                     "(./control.sh start redis runs it again)")
