"""The small engine that turns chains and parse results into messages.

A message is ``send_task(step.task, args=[envelope, units])``: the envelope says
which job, which step of its chain and how deep; ``units`` is a batch of
``{"id", "params"}`` of that one step. Unit ids are deterministic (step + params),
so the same page reached twice in a job is one unit, and a redelivered parent
republishes children that the ledger already knows.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NotRequired, TypedDict

from celery import Celery

from chains.checks import check_chain
from chains.job import Job
from chains.model import Chain, Step
from external_interface.ledger import Ledger

if TYPE_CHECKING:
    from external_interface.resources import Resources


class Envelope(TypedDict):
    job: str
    step: str
    depth: int


class Unit(TypedDict):
    id: str
    params: dict[str, Any]
    page: int  # position in its list: 0 for a first page, +1 for each next page
    rotation: NotRequired[dict[str, Any]]  # resources this unit burnt (providers.rotation)


def unit_id(step: str, params: Mapping[str, Any]) -> str:
    """Same step and params, same id: in a job, a unit exists once."""
    raw = json.dumps([step, params], sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(raw.encode(), digest_size=10).hexdigest()


def make_unit(step: str, params: Mapping[str, Any], page: int = 0) -> Unit:
    return {"id": unit_id(step, params), "params": dict(params), "page": page}


def children(chain: Chain, step: str, records: Mapping[str, list[dict[str, Any]]],
             next_page: Mapping[str, Any] | None, page: int = 0) -> dict[str, list[Unit]]:
    """The units a finished unit of ``step`` spawns, grouped by step, in order, deduplicated."""
    out: dict[str, dict[str, Unit]] = {}
    if next_page is not None:
        unit = make_unit(step, next_page, page + 1)
        out.setdefault(step, {})[unit["id"]] = unit
    for link in chain.links_from(step):
        for record in records.get(link.records, []):
            child = {dst: record[src] for dst, src in link.map.items()}
            unit = make_unit(link.dst, child)
            out.setdefault(link.dst, {})[unit["id"]] = unit
    return {name: list(units.values()) for name, units in out.items()}


def by_depth(step: str, depth: int,
             kids: dict[str, dict[str, Unit]]) -> dict[int, dict[str, list[Unit]]]:
    """A next page stays at its list's depth; a linked child goes one deeper.

    Depth orders the queue (deeper first) and bounds the job: counting next pages
    would starve parallel lists, and cut a long list at ``max_depth``.
    """
    out: dict[int, dict[str, list[Unit]]] = {}
    for child_step, units in kids.items():
        for unit in units.values():
            same_list = child_step == step and unit.get("page", 0) > 0
            out.setdefault(depth + (0 if same_list else 1), {}).setdefault(
                child_step, []).append(unit)
    return out


def revival_payload(step: str, depth: int, unit: Unit) -> str:
    """What the ledger keeps of an open unit to publish it again: step, depth, unit."""
    return json.dumps([step, depth, unit], separators=(",", ":"))


def revived(payload: str) -> tuple[str, int, Unit]:
    """The inverse of ``revival_payload``."""
    step, depth, unit = json.loads(payload)
    return str(step), int(depth), unit


def queue_of(step: Step) -> str:
    """The queue a step's messages go to: its own, or its site's (``demo.h5.feed`` -> demo)."""
    return step.queue or step.task.split(".", 1)[0]


def message_priority(broker_url: str, step: Step, depth: int) -> int:
    """Deeper first (a fan-out drains instead of flooding), then the step's own priority.

    RabbitMQ serves higher numbers first (classic queues with x-max-priority; quorum
    queues before RabbitMQ 4.0 ignore priorities, see ``CELERY_QUEUE_TYPE``); Redis
    serves lower numbers first.
    """
    level = min(9, max(0, step.priority + min(depth, 4) - 2))
    return level if broker_url.startswith(("amqp", "pyamqp")) else 9 - level


@dataclass
class Held:
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

    def __init__(self, app: Celery, ledger: Ledger) -> None:
        self.app = app
        self.ledger = ledger

    def register(self, job_id: str, units_by_step: Mapping[str, Iterable[Unit]],
                 depth: int) -> set[str]:
        """Must precede the parent's finish: ``pending`` never reaches zero too early.

        Each unit's message payload is kept in the ledger until it finishes, so that a
        message the broker loses can be sent again (``external_interface.reviver``).
        """
        flat = [(step, u) for step, units in units_by_step.items() for u in units]
        return self.ledger.register(job_id, [(u["id"], step) for step, u in flat],
                                    [revival_payload(step, depth, u) for step, u in flat])

    def publish(self, chain: Chain, job_id: str, step: str, units: list[Unit],
                depth: int, countdown: float | None = None) -> None:
        """Send ``units`` of one step in messages of the step's batch size."""
        spec = chain.steps[step]
        envelope: Envelope = {"job": job_id, "step": step, "depth": depth}
        priority = message_priority(str(self.app.conf.broker_url), spec, depth)
        for start in range(0, len(units), spec.batch_size):
            batch = units[start : start + spec.batch_size]
            self.app.send_task(spec.task, args=[envelope, batch], queue=queue_of(spec),
                               priority=priority, countdown=countdown,
                               argsrepr=f"[{envelope!r}, <{len(batch)} units>]",
                               kwargsrepr="{}")  # Celery's saferepr of a batch costs more

    def spawn(self, chain: Chain, job_id: str, units_by_step: Mapping[str, list[Unit]],
              depth: int, republish: bool = True, held: Held | None = None,
              hold: str | None = None) -> None:
        """Register, then publish the children, skipping those past the chain's max depth.

        A parent on its first run publishes only the children new to the ledger: a
        child another parent already registered is on its way, and a second message
        would fetch it twice. A parent that runs again (it may have died between
        registering and publishing) passes ``republish`` and sends them all.

        With ``held`` (a first run only), the new next pages of step ``hold`` go to
        ``held.pages`` for the caller to run itself, and children are sent in full
        messages only: the rest waits in ``held.waiting`` for the next page's.
        """
        if depth > chain.max_depth:
            return
        new = self.register(job_id, units_by_step, depth)
        for step, units in units_by_step.items():
            send = units if republish else [u for u in units if u["id"] in new]
            if held is not None and not republish:
                if step == hold:
                    held.pages += [u for u in send if u.get("page", 0) > 0]
                    send = [u for u in send if u.get("page", 0) == 0]
                send = held.waiting.pop((step, depth), []) + send
                size = chain.steps[step].batch_size
                if rest := len(send) % size:
                    send, held.waiting[(step, depth)] = send[:-rest], send[-rest:]
            if send:
                self.publish(chain, job_id, step, send, depth)

    def flush(self, chain: Chain, job_id: str, held: Held) -> None:
        """Publish the children that wait for a full message: the list they came from ends."""
        for (step, depth), units in held.waiting.items():
            self.publish(chain, job_id, step, units, depth)
        held.waiting.clear()


def launch(chain: Chain, params: dict[str, Any], job_id: str | None = None,
           resources: Resources | None = None) -> Job:
    """Create the job, register its root unit, publish it; returns the handle."""
    return launch_many(chain, [params], [job_id] if job_id else None, resources)[0]


def launch_many(chain: Chain, params: list[dict[str, Any]], job_ids: list[str] | None = None,
                resources: Resources | None = None) -> list[Job]:
    """One job per params, the chain checked once: a sharded start (Scrapy's start URLs)
    reaches the queue at once rather than one full launch after another."""
    if resources is None:
        from external_interface.resources import current

        resources = current()
    resources.app.loader.import_default_modules()
    check_chain(chain, resources.app.tasks)
    ids = job_ids or [uuid.uuid4().hex[:16] for _ in params]
    dumped, publisher = chain.model_dump(mode="json"), Publisher(resources.app, resources.ledger)
    for job_id, root in zip(ids, params, strict=True):
        resources.ledger.create_job(job_id, dumped, root)
        publisher.spawn(chain, job_id, {chain.start: [make_unit(chain.start, root)]}, depth=0)
    return [Job(job_id, resources.ledger) for job_id in ids]
