"""Units out: registered in the ledger first, then sent in messages of their step's size.

The runtime sends through a ``Dispatch`` it is given (``chains.broker.dispatch`` on
Celery, a list in a test or ``try``), so nothing here needs a broker to run.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from chains.runtime.units import Envelope, Unit, revival_payload

if TYPE_CHECKING:
    from chains.runtime.ledger import Ledger
    from chains.runtime.model import Chain, Step


FRONTIER_UNITS = 1000  # root units of one step from which a launch sends bigger messages


class Dispatch(Protocol):
    """Where messages go. ``send`` returns once the broker holds the message."""

    kind: Literal["redis", "amqp"]  # orders priorities (``message_priority``)

    def send(self, task: str, args: list[Any], queue: str, priority: int,
             countdown: float | None = None) -> None:
        """Publish one message ``args = [envelope, units]`` for ``task`` on ``queue``."""
        ...


@dataclass
class Sent:
    """One message a ``Recorder`` kept."""

    task: str
    envelope: Envelope
    units: list[Unit]
    queue: str
    priority: int
    countdown: float | None


@dataclass
class Recorder:
    """A ``Dispatch`` that keeps messages instead of sending them: ``try`` shows what a
    unit would spawn, and tests run phases on one unit without a broker."""

    kind: Literal["redis", "amqp"] = "redis"
    sent: list[Sent] = field(default_factory=list)

    def send(self, task: str, args: list[Any], queue: str, priority: int,
             countdown: float | None = None) -> None:
        envelope, units = args
        self.sent.append(Sent(task, envelope, units, queue, priority, countdown))


def queue_of(step: Step) -> str:
    """The queue a step's messages go to: its own, or its site's (``demo.h5.feed`` -> demo)."""
    return step.queue or step.task.split(".", 1)[0]


def message_priority(kind: Literal["redis", "amqp"], step: Step, depth: int) -> int:
    """Deeper first (a fan-out drains instead of flooding), then the step's own priority.

    RabbitMQ serves higher numbers first (classic queues with x-max-priority; quorum
    queues before RabbitMQ 4.0 ignore priorities, see ``CELERY_QUEUE_TYPE``); Redis
    serves lower numbers first.
    """
    level = min(9, max(0, step.priority + min(depth, 4) - 2))
    return level if kind == "amqp" else 9 - level


@dataclass
class Outbox:
    """What a message that runs its list on holds unpublished (``Step.inline_next``):
    its next pages, which it runs itself, and children that wait to fill a message of
    their step's ``batch_size``. The ledger knows them all (``Ledger.carried``)."""

    pages: list[Unit] = field(default_factory=list)
    waiting: dict[tuple[str, int], list[Unit]] = field(default_factory=dict)

    def ids(self) -> list[str]:
        return [u["id"] for u in self.pages] + [
            u["id"] for units in self.waiting.values() for u in units]


class Publisher:
    """Registers units in the ledger, then publishes them in batches."""

    def __init__(self, dispatch: Dispatch, ledger: Ledger) -> None:
        self.dispatch = dispatch
        self.ledger = ledger

    def register(self, job_id: str, units_by_step: Mapping[str, Iterable[Unit]],
                 depth: int) -> set[str]:
        """Must precede the parent's finish: ``pending`` never reaches zero too early.

        Each unit's message payload is kept in the ledger until it finishes, so that a
        message the broker loses can be sent again (``chains.runtime.reviver``).
        """
        flat = [(step, u) for step, units in units_by_step.items() for u in units]
        return self.ledger.register(job_id, [(u["id"], step) for step, u in flat],
                                    [revival_payload(step, depth, u) for step, u in flat])

    def publish(self, chain: Chain, job_id: str, step: str, units: list[Unit],
                depth: int, countdown: float | None = None, size: int | None = None) -> None:
        """Send ``units`` of one step in messages of the step's batch size (or ``size``)."""
        spec = chain.steps[step]
        envelope: Envelope = {"job": job_id, "step": step, "depth": depth}
        priority = message_priority(self.dispatch.kind, spec, depth)
        size = size or spec.batch_size
        for start in range(0, len(units), size):
            batch = units[start : start + size]
            self.dispatch.send(spec.task, [envelope, batch], queue_of(spec), priority,
                               countdown)

    def spawn(self, chain: Chain, job_id: str, units_by_step: Mapping[str, list[Unit]],
              depth: int, republish: bool = True, outbox: Outbox | None = None,
              hold: str | None = None, frontier_batch: int = 0) -> None:
        """Register, then publish the children, skipping those past the chain's max depth.

        A parent publishes only the children new to the ledger: a child another
        parent already registered is on its way, and a second message would fetch it
        twice. A parent whose earlier start died (it may have died between registering
        and publishing) passes ``republish`` and sends them all.

        With ``frontier_batch``, a step with ``FRONTIER_UNITS`` units or more goes in
        messages of at least that many (a launch's big frontier: one message envelope per
        so many units, not per batch size, in the broker's memory and publish calls).

        With ``outbox`` (not on a republish), the new next pages of step ``hold`` go to
        ``outbox.pages`` for the caller to run itself, and children are sent in full
        messages only: the rest waits in ``outbox.waiting`` for the next page's.
        """
        if depth > chain.max_depth:
            return
        new = self.register(job_id, units_by_step, depth)
        for step, units in units_by_step.items():
            send = units if republish else [u for u in units if u["id"] in new]
            if outbox is not None and not republish:
                if step == hold:
                    outbox.pages += [u for u in send if u.get("page", 0) > 0]
                    send = [u for u in send if u.get("page", 0) == 0]
                send = outbox.waiting.pop((step, depth), []) + send
                size = chain.steps[step].batch_size
                if rest := len(send) % size:
                    send, outbox.waiting[(step, depth)] = send[:-rest], send[-rest:]
            if send:
                big = frontier_batch and len(send) >= FRONTIER_UNITS
                wide = max(chain.steps[step].batch_size, frontier_batch) if big else None
                self.publish(chain, job_id, step, send, depth, size=wide)

    def flush(self, chain: Chain, job_id: str, outbox: Outbox) -> None:
        """Publish the children that wait for a full message: the list they came from ends."""
        for (step, depth), units in outbox.waiting.items():
            self.publish(chain, job_id, step, units, depth)
        outbox.waiting.clear()
