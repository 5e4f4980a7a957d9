"""kombu's Redis transport, with one hole of kombu 5.7 closed: a worker that dies of its
own reconnection after the broker was killed.

When a Redis broker goes away, Celery tears the connection down and builds a new one;
the old channel lives on in two places. Closing it restores the messages it holds
unacked, and a task that finishes after the reconnection acks its message through it.
Both build a client from the transport's connection info, which the teardown already
dropped: kombu raises ``AttributeError: 'NoneType' object has no attribute 'hostname'``,
Celery takes an ``AttributeError`` for a bug, calls it unrecoverable, and the worker
process exits (the family of celery/kombu#582, #970; seen in 2 of 100 and then, by the
ack, in 1 of 14 ``broker_sigkill_restart`` fault runs).

Here a channel remembers how it reached its server when it is opened, so after the
teardown it still restores its unacked messages at once and acks on the restarted
server. Should a close still fail so, it ends quietly: the messages stay in kombu's
unacked hash, which the next ``restore_visible`` of any worker empties after the
visibility timeout.

``install()`` makes ``redis://``, ``rediss://`` and ``redis+socket://`` URLs use this
transport: kombu picks a transport by the URL's scheme (the ``+socket`` prefix
included), so Celery's ``broker_transport`` setting cannot choose it.
"""

from __future__ import annotations

import logging
from typing import Any

import kombu.transport as kombu_transport
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)


class Channel(kombu_redis.Channel):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._params: dict[bool, dict[str, Any]] = {}
        super().__init__(*args, **kwargs)  # opens the asynchronous client: its params kept
        self._connparams(asynchronous=False)  # and those of the clients built per call

    def _connparams(self, asynchronous: bool = False) -> dict[str, Any]:
        """kombu's, remembered; once the connection is torn down, the remembered ones."""
        if self.connection.client is None and asynchronous in self._params:
            return dict(self._params[asynchronous])
        params: dict[str, Any] = super()._connparams(asynchronous)
        self._params[asynchronous] = dict(params)
        return params

    def close(self) -> None:
        try:
            super().close()
        except AttributeError:
            if getattr(self.connection, "client", None) is not None:
                raise  # not the torn-down connection: a bug, let Celery see it
            log.warning("broker connection closed while its channel still held unacked "
                        "messages; they come back after the visibility timeout")


class Transport(kombu_redis.Transport):
    Channel = Channel


def install(transport: str = f"{__name__}:Transport") -> None:
    """Route the Redis URL schemes to ``transport`` (idempotent). kombu remembers the
    class of each name it resolved (``_transport_cache``, private: kombu is pinned below
    5.8 for the reviver already); those entries are dropped so the next resolves anew."""
    for scheme in ("redis", "rediss"):
        TRANSPORT_ALIASES[scheme] = transport
        kombu_transport._transport_cache.pop(scheme, None)
