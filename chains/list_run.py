"""A list run on in one message (``Step.inline_next``): its budget, letting it go, resuming it.

The base task runs a batch's next pages as its next batch and holds children back
until they fill a message (``chains.engine.Held``); the ledger records what is held
with each finish (``Ledger.finish_many``'s ``carry``). These are the pieces around
that loop: how far a message may run on, what it publishes when it stops early,
and how a message that comes back after its worker died goes on from there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from celery.utils.log import get_task_logger

from chains.engine import Envelope, Held, Publisher, Unit, revived
from chains.model import Chain

if TYPE_CHECKING:
    from external_interface.resources import Resources

log = get_task_logger(__name__)


@dataclass
class RunOn:
    """How far a message may still run its list on itself: not from a retry (its count
    of retries is not the next page's), and not past a quarter of the soft time limit,
    so that the page in hand ends well before it."""

    pages_left: int
    until: float

    @classmethod
    def of(cls, chain: Chain, step: str, retries: int | None, soft_limit_s: float) -> RunOn:
        pages = chain.steps[step].inline_next if not retries else 0
        return cls(pages, time.monotonic() + soft_limit_s / 4)

    def allows(self) -> bool:
        return self.pages_left > 0 and time.monotonic() < self.until


def let_go(res: Resources, chain: Chain, envelope: Envelope, held: Held) -> None:
    """Publish whatever the message held back: it will not run its list on."""
    publisher = Publisher(res.app, res.ledger)
    publisher.flush(chain, envelope["job"], held)
    if held.pages:
        publisher.publish(chain, envelope["job"], envelope["step"], held.pages,
                          envelope["depth"])
        held.pages = []


def resume(res: Resources, chain: Chain, envelope: Envelope,
           carrier: str) -> tuple[Envelope, list[Unit]]:
    """A message came back whose units are all finished: if it was running its list on
    (its worker died), what it held that is still open goes on: its next pages in this
    message (returned), the children that waited for a full message to the queue."""
    job_id = envelope["job"]
    carried = res.ledger.carried(job_id, carrier).get(carrier, [])
    found = [revived(p) for p in res.ledger.open_payloads(job_id, carried).values()]
    if not found:
        return envelope, []
    log.warning("message of %s came back: going on with the %d units it held",
                envelope["step"], len(found))
    held, depth = Held(), envelope["depth"]
    for step, at, unit in found:
        if step == envelope["step"] and unit.get("page", 0) > 0:
            held.pages.append(unit)
            depth = at
        else:
            held.waiting.setdefault((step, at), []).append(unit)
    Publisher(res.app, res.ledger).flush(chain, job_id, held)
    return {"job": job_id, "step": envelope["step"], "depth": depth}, held.pages
