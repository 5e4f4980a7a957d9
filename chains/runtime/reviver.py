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

import logging
import time
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import Protocol

from chains.runtime.dispatch import Dispatch, Publisher, queue_of
from chains.runtime.ledger import Ledger
from chains.runtime.model import Chain
from chains.runtime.units import Unit, revived
from external_interface import keys

log = logging.getLogger(__name__)


class BrokerView(Protocol):
    """What a broker holds, as far as it can tell."""

    def held_units(self, job_id: str, queues: Iterable[str]) -> set[str] | None:
        """Ids of the job's units in ``queues`` or delivered and unacked; None if unknowable."""


class Reviver:
    """Finds stalled jobs and publishes their lost units again."""

    def __init__(self, dispatch: Dispatch, ledger: Ledger, stall_s: float) -> None:
        self.dispatch = dispatch
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
        publisher = Publisher(self.dispatch, self.ledger)
        for (step, depth), units in groups.items():
            publisher.publish(chain, job_id, step, units, depth)
            self.ledger.count(job_id, step, "revived", len(units))
        if lost:
            log.warning("job %s: %d units were registered but held by no queue; sent again",
                        job_id, len(lost))
        return len(lost)


def sweep_once(reviver: Reviver, interval_s: float,
               view: Callable[[], AbstractContextManager[BrokerView | None]]) -> dict[str, int]:
    """Sweep if no other worker of the cluster did in the last ``interval_s``; ``view``
    opens a view of the broker for the sweep (None when it cannot be read)."""
    lock = reviver.ledger.redis.set(keys.REVIVER_LOCK, "1", nx=True,
                                    px=max(1, int(interval_s * 1000)))
    if not lock:
        return {}
    with view() as broker:
        return reviver.sweep(broker) if broker is not None else {}
