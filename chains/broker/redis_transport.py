"""kombu's Redis transport, with one hole of kombu 5.7 closed: a worker that dies of its
own reconnection after the broker was killed.

When a Redis broker goes away, Celery closes the consumer's connection before it
reconnects. Closing the channel restores the messages it holds unacked, through a
client built from the transport's connection info; when the connection was torn down
first, that info is gone and kombu raises ``AttributeError: 'NoneType' object has no
attribute 'hostname'``. Celery takes an ``AttributeError`` for a bug, calls it
unrecoverable, and the worker process exits (the family of celery/kombu#582, #970;
seen in 2 of 100 ``broker_sigkill_restart`` fault runs).

Here such a close ends quietly: the messages stay in kombu's unacked hash, where the
next ``restore_visible`` of any worker gives them back after the visibility timeout
(the ledger's reviver covers what no queue holds), and the worker reconnects.

``install()`` makes ``redis://``, ``rediss://`` and ``redis+socket://`` URLs use this
transport: kombu picks a transport by the URL's scheme (the ``+socket`` prefix
included), so Celery's ``broker_transport`` setting cannot choose it.
"""

from __future__ import annotations

import logging

import kombu.transport as kombu_transport
from kombu.transport import TRANSPORT_ALIASES
from kombu.transport import redis as kombu_redis

log = logging.getLogger(__name__)


class Channel(kombu_redis.Channel):
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
