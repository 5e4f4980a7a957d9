"""One snapshot of the whole cluster as plain data: jobs, workers, queues, sites, pools.

``consumers`` are the live workers consuming each queue, from their heartbeats
(``chains.runtime.roster``): a queue that holds messages and that no worker consumes
is a job waiting for ever, and the dashboard says which command starts one.

The dashboard draws it, ``python -m monitor --once --json`` prints it, the alert
loop checks it. It is read fresh every time from the places that already hold
the truth (the ledger, Celery's remote control, the broker's lists), so any host
can take it and no monitor process has to run for the numbers to be right.

``sites``, ``throttle`` and ``pools`` are sections: a function of the state Redis
returning ``{name: {field: value}}``. ``sites`` shows each politeness bucket (current
rate, cooldown after a 429, leases held); ``throttle`` each site's (or host's)
adaptive controller: the rate it allows now, its window of requests in flight, the
server's rate it learnt (ceiling), latency, 429s and 5xx seen; ``pools`` is empty
until the resource pools exist. The dashboard draws one table per section without
further changes.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import redis
from celery import Celery

from chains.runtime.job import Job
from chains.runtime.ledger import Ledger
from chains.runtime.roster import Roster

Section = Callable[[redis.Redis], dict[str, dict[str, Any]]]
IGNORED_QUEUE_SUFFIXES = (".pidbox",)  # Celery's remote-control reply queues
IGNORED_QUEUE_PREFIXES = ("celeryev.",)  # event receivers (Flower, this monitor)


def nothing_yet(_: redis.Redis) -> dict[str, dict[str, Any]]:
    """A section no module fills yet."""
    return {}


def politeness(client: redis.Redis) -> dict[str, dict[str, Any]]:
    """Every politeness bucket's live state, as the limiter reports it."""
    from external_interface.politeness.factory import limiter_from_redis

    limiter = limiter_from_redis(client)
    return {bucket: limiter.state(bucket) for bucket in limiter.buckets()}


def throttle(client: redis.Redis) -> dict[str, dict[str, Any]]:
    """Every site's (or host's) adaptive throttle, as the controller in Redis holds it."""
    from config import ThrottleSettings
    from external_interface.politeness.redis_throttle import rates

    return {row.pop("key"): row for row in rates(client, ThrottleSettings())}


SECTIONS: Mapping[str, Section] = {"sites": politeness, "throttle": throttle,
                                   "pools": nothing_yet}


def snapshot(client: redis.Redis, app: Celery | None, *, job_limit: int = 20,
             inspect_timeout: float = 1.0, sections: Mapping[str, Section] = SECTIONS,
             queues: Iterable[str] = (), stopped: str | None = None) -> dict[str, Any]:
    """Everything at once; ``inspect_timeout`` bounds the wait for workers' replies.

    Without ``app`` (the cluster is ``stopped``: the line says how it was read) there
    are no workers or queues to ask: the jobs are what the state store last held."""
    return {
        "taken_at": time.time(),
        "stopped": stopped,
        "jobs": jobs(client, job_limit),
        "workers": workers(app, inspect_timeout) if app is not None else {},
        "queues": queue_depths(app, queues) if app is not None else {},
        "consumers": {q: sorted(w) for q, w in Roster(client).consumers().items()},
        **{name: section(client) for name, section in sections.items()},
    }


def jobs(client: redis.Redis, limit: int = 20) -> list[dict[str, Any]]:
    """The newest ``limit`` jobs, each as ``Job.overview()``: state, steps, progress, ..."""
    ledger = Ledger(client)
    return [Job(job_id, ledger).overview() for job_id in ledger.job_ids(limit)]


def workers(app: Celery, timeout: float = 1.0) -> dict[str, dict[str, Any]]:
    """Alive workers (those answering ``stats`` within ``timeout``) and their pools."""
    replies = app.control.inspect(timeout=timeout).stats() or {}
    return {name: _worker(stats) for name, stats in sorted(replies.items())}


def _worker(stats: dict[str, Any]) -> dict[str, Any]:
    pool = stats.get("pool") or {}
    return {
        "concurrency": pool.get("max-concurrency"),
        "processes": len(pool.get("processes") or []),
        "tasks_done": sum((stats.get("total") or {}).values()),
        "pid": stats.get("pid"),
        "uptime_s": stats.get("uptime"),
    }


def queue_depths(app: Celery, extra: Iterable[str] = ()) -> dict[str, int]:
    """Ready messages per queue, priority sub-queues included.

    On Redis the queues are found from kombu's bindings (every queue a message was
    routed to or a worker consumed from); elsewhere only the named ones are asked.
    """
    names = {str(app.conf.task_default_queue), *extra}
    with app.connection_for_read() as conn:
        channel = conn.default_channel
        if conn.transport.driver_type != "redis":
            return {q: _declared_depth(channel, q) for q in sorted(names)}
        client = channel.client
        names |= _bound_queues(client, channel.keyprefix_queue, channel.sep)
        ordered = sorted(names)
        pipe = client.pipeline(transaction=False)
        for queue in ordered:
            for key in priority_keys(queue, channel.priority_steps, channel.sep):
                pipe.llen(key)
        lengths = pipe.execute()
    per = len(channel.priority_steps)
    return {q: sum(lengths[i * per:(i + 1) * per]) for i, q in enumerate(ordered)}


def priority_keys(queue: str, steps: Iterable[int], sep: str) -> list[str]:
    """Kombu's Redis lists of one queue: ``<queue>`` then ``<queue><sep><n>`` per step."""
    return [f"{queue}{sep}{n}" if n else queue for n in steps]


def _bound_queues(client: Any, keyprefix: str, sep: str) -> set[str]:
    """Queue names in ``_kombu.binding.*`` sets; members are ``key<sep>pattern<sep>queue``."""
    found: set[str] = set()
    for key in client.scan_iter(match=keyprefix % "*", count=500):
        for member in client.smembers(key):
            text = member.decode() if isinstance(member, bytes) else str(member)
            queue = text.split(sep)[-1]
            if queue and not (queue.endswith(IGNORED_QUEUE_SUFFIXES)
                              or queue.startswith(IGNORED_QUEUE_PREFIXES)):
                found.add(queue)
    return found


def _declared_depth(channel: Any, queue: str) -> int:
    """AMQP: a passive declare answers the ready count without creating the queue."""
    try:
        return int(channel.queue_declare(queue=queue, passive=True).message_count)
    except Exception:  # the queue does not exist (yet): nothing waits in it
        return 0
