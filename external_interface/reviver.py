"""The reviver: sends again the units a stalled job registered but no broker queue holds.

kombu's Redis transport pops a message (BRPOP) and records it as unacked in a
second round trip; a worker killed between the two, or a redis-server that dies
after the pop reached its append-only file, loses that message for good
(celery/celery#7950). On a busy worker the window is open most of the time: the
server pops the next message as soon as the worker asks, while the worker is
still busy. The ledger knows better than the broker: every unit a job registered
keeps its message payload in the job's ``open`` hash until it finishes, so a unit
is lost exactly when it is open and held by no queue and no unacked slot, nor
carried by a message so held (a list run inline, ``Step.inline_next``).

Only a stalled job is examined (no unit of it began, ended an attempt or finished
for ``stall_s``): a job at work has units in those milliseconds-long windows (a
popped message on its way to the unacked hash, a parent between registering and
publishing its children); a stalled one has none. A wrong guess costs a duplicate
message, never a duplicate item: a unit's second message finds it finished.

Only the Redis transport can be examined; RabbitMQ keeps a delivered message on the
server until it is acknowledged, so it has no such window, and nothing is revived.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import redis
from celery import Celery, bootsteps
from celery.utils.log import get_logger

from chains.engine import Publisher, Unit, queue_of, revived
from chains.model import Chain
from external_interface import keys
from external_interface.ledger import Ledger
from utils.brokers import broker_kind

log = get_logger(__name__)
SCAN_CHUNK = 1000


class BrokerView(Protocol):
    """What a broker holds, as far as it can tell."""

    def held_units(self, job_id: str, queues: Iterable[str]) -> set[str] | None:
        """Ids of the job's units in ``queues`` or delivered and unacked; None if unknowable."""


class RedisBrokerView:
    """Reads kombu's Redis layout: one list per queue and priority, one hash of unacked."""

    def __init__(self, client: redis.Redis, unacked_key: str,
                 queue_keys: Callable[[str], list[str]]) -> None:
        self.client = client
        self.unacked_key = unacked_key
        self.queue_keys = queue_keys  # queue name -> its list keys, one per priority

    def held_units(self, job_id: str, queues: Iterable[str]) -> set[str] | None:
        held: set[str] = set()
        for queue in sorted(set(queues)):
            for key in dict.fromkeys(self.queue_keys(queue)):
                held |= _units_of(job_id, self._list(key))
        unacked = (json.loads(raw)[0] for raw in self.client.hvals(self.unacked_key))
        return held | _units_of(job_id, unacked)

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


def _units_of(job_id: str, messages: Iterable[dict[str, Any]]) -> set[str]:
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


class Reviver:
    """Finds stalled jobs and publishes their lost units again."""

    def __init__(self, app: Celery, ledger: Ledger, stall_s: float) -> None:
        self.app = app
        self.ledger = ledger
        self.stall_s = stall_s

    def sweep(self, broker: BrokerView, jobs: int = 200) -> dict[str, int]:
        """Revive the lost units of every stalled running job among the newest ``jobs``."""
        now = time.time()
        revived_per_job = {}
        for job_id in self.ledger.job_ids(jobs):
            if (self.ledger.state(job_id) == "running"
                    and now - self.ledger.active_at(job_id) >= self.stall_s):
                revived_per_job[job_id] = self.revive(job_id, broker)
        return {j: n for j, n in revived_per_job.items() if n}

    def revive(self, job_id: str, broker: BrokerView) -> int:
        """Publish again the job's open units that no queue holds; returns how many."""
        open_units = self.ledger.open_units(job_id)
        if not open_units:
            return 0
        chain = Chain.model_validate(self.ledger.chain_of(job_id))
        held = broker.held_units(job_id, (queue_of(s) for s in chain.steps.values()))
        if held is None:
            return 0
        held |= {unit for carrier, units in self.ledger.carried(job_id).items()
                 if carrier in held for unit in units}  # run inline by a held message
        lost = [revived(payload) for unit_id, payload in open_units.items()
                if unit_id not in held]
        groups: dict[tuple[str, int], list[Unit]] = {}
        for step, depth, unit in lost:
            groups.setdefault((step, depth), []).append(unit)
        publisher = Publisher(self.app, self.ledger)
        for (step, depth), units in groups.items():
            publisher.publish(chain, job_id, step, units, depth)
            self.ledger.count(job_id, step, "revived", len(units))
        if lost:
            log.warning("job %s: %d units were registered but held by no queue; sent again",
                        job_id, len(lost))
        return len(lost)


def sweep_once(reviver: Reviver, interval_s: float) -> dict[str, int]:
    """Sweep if no other worker of the cluster did in the last ``interval_s``."""
    lock = reviver.ledger.redis.set(keys.REVIVER_LOCK, "1", nx=True,
                                    px=max(1, int(interval_s * 1000)))
    if not lock:
        return {}
    with broker_view(reviver.app) as broker:
        return reviver.sweep(broker) if broker is not None else {}


class ReviverStep(bootsteps.StartStopStep):
    """Every worker looks for lost units in a thread of its main process; a lock in Redis
    lets one worker of the cluster sweep per interval.

    The thread builds its own Celery app and clients: the pool children forked from
    this process never share a lock or a socket with it.
    """

    def __init__(self, parent: Any, **kwargs: Any) -> None:
        super().__init__(parent, **kwargs)
        self._stopping = threading.Event()

    def start(self, parent: Any) -> None:
        threading.Thread(target=self._run, name="reviver", daemon=True).start()

    def stop(self, parent: Any) -> None:
        self._stopping.set()

    def _run(self) -> None:
        from config import get_settings
        from external_interface.resources import state_redis
        from worker import make_app

        settings = get_settings()
        interval = settings.revive.interval_s
        reviver = Reviver(make_app(settings), Ledger(state_redis(settings.state.redis_url)),
                          settings.revive.stall_s)
        while not self._stopping.wait(interval):
            try:
                sweep_once(reviver, interval)
            except Exception:  # the broker or Redis is away: try again next time
                log.exception("reviver: sweep failed")
