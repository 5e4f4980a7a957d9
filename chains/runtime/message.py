"""One message of a step, end to end: its batch through the phases, page after page.

    outcome = run_message(rt, "demo.h5.feed", envelope, units, retries)

The ledger's ``begin`` says, in one round trip, whether the job still runs and which
units are already finished (a redelivery: those are skipped). The rest go
``prepare -> fetch -> parse -> save -> spawn -> close`` (``chains.runtime.pipeline``).
A step with ``inline_next`` runs its list on in this message: the batch's next pages
become the next batch, and children wait to fill a message of their step; with each
page's finish the ledger records what the message holds back, so a message that
comes back after its worker died goes on from there (``resume``). A batch that comes
back after a worker died while holding it is split, one unit a message, so a unit
that kills its worker every time ends as a poison unit alone.

Nothing here knows Celery: ``Outcome.retry`` is what the task adapter
(``base_task.py``) retries, and ``Runtime.interrupts`` are its soft time limit.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from chains.runtime import registry
from chains.runtime.checks import resolve
from chains.runtime.dispatch import Outbox, Publisher
from chains.runtime.ledger import PAUSED, RUNNING, Carried, Ledger
from chains.runtime.model import Chain
from chains.runtime.pipeline.batch import Batch, UnitRun
from chains.runtime.pipeline.close import Retry, close
from chains.runtime.pipeline.fetch import fetch
from chains.runtime.pipeline.parse import parse
from chains.runtime.pipeline.prepare import prepare
from chains.runtime.pipeline.save import save
from chains.runtime.pipeline.spawn import spawn
from chains.runtime.site import Site
from chains.runtime.units import Envelope, Unit, revived
from external_interface.providers.declare import StepResources

if TYPE_CHECKING:
    from chains.runtime.context import Runtime

log = logging.getLogger(__name__)


@dataclass
class Outcome:
    """What a message did: counts per outcome, and the units the adapter must retry."""

    counts: Counter[str] = field(default_factory=Counter)
    retry: Retry | None = None


@dataclass(frozen=True)
class Launched:
    """What a job's launch fixed: its chain, and the settings of each of its sites."""

    chain: Chain
    settings: dict[str, dict[str, Any]]
    _sites: dict[str, BaseModel] = field(default_factory=dict, repr=False, compare=False)

    def site_settings(self, site: Site) -> BaseModel:
        """The site's settings as the launch fixed them, validated once per process (a job
        launched without any reads this worker's environment, once)."""
        found = self._sites.get(site.name)
        if found is None:
            stored = self.settings.get(site.name)
            found = site.stored_settings(stored) if stored is not None else site.read_settings()
            self._sites[site.name] = found
        return found


@lru_cache(maxsize=256)
def _launched(ledger: Ledger, job_id: str) -> Launched:
    """A launch stores its chain resolved; a job created another way (by hand, by a tool)
    has its links' defaults filled in here, once per process."""
    chain = resolve(Chain.model_validate(ledger.chain_of(job_id)), registry.steps())
    return Launched(chain, ledger.settings_of(job_id))


def launched(rt: Runtime, job_id: str) -> Launched:
    """The job's chain and settings, read once per process: a launch never changes."""
    return _launched(rt.ledger, job_id)


def run_message(rt: Runtime, task: str, envelope: Envelope, units: list[Unit],
                retries: int) -> Outcome:
    """Run a message of ``task``'s units; ``retries`` is how often it was retried."""
    job_id = envelope["job"]
    begun = rt.ledger.begin(job_id, [u["id"] for u in units])
    if begun.state != RUNNING:  # paused: parked for resume; cancelled or gone: nothing
        return Outcome(Counter({"parked" if begun.state == PAUSED else "ignored": len(units)}))
    chain = launched(rt, job_id).chain
    carrier = units[0]["id"] if units else ""
    if units and all(finished for finished, _, _ in begun.units):
        envelope, units = resume(rt, chain, envelope, carrier)
        if not units:
            return Outcome(Counter(ignored=len(begun.units)))
        begun = rt.ledger.begin(job_id, [u["id"] for u in units])
    page_budget = PageBudget.of(chain, envelope["step"], retries,
                                rt.settings.task.soft_time_limit_s)
    carrying = bool(page_budget.pages_left) and begun.state == RUNNING
    outcome, outbox, own = Outcome(), Outbox(), units
    while begun.state == RUNNING:
        runs = [UnitRun(u, starts, first)
                for u, (finished, starts, first) in zip(units, begun.units, strict=True)
                if not finished]
        if len(runs) > 1 and any(r.starts > 1 for r in runs):
            outcome.counts.update(isolate(rt, chain, envelope, runs))
            break
        batch = batch_of(rt, task, envelope, chain, retries)
        outbox = Outbox(waiting=outbox.waiting)
        try:
            runs = run_phases(batch, runs, outbox, page_budget.allows())
            closed = close(batch, runs, Carried(carrier, outbox.ids()) if carrying else None)
        except BaseException as exc:  # what this message holds goes on in the queue
            hand_back(rt, chain, envelope, outbox, [] if units is own else units, exc)
            raise
        outcome.counts.update(closed.counts)
        if closed.retry is not None:
            flush_outbox(rt, chain, envelope, outbox)
            outcome.retry = closed.retry
            break
        if not outbox.pages:
            break
        page_budget.pages_left -= 1
        units = outbox.pages
        begun = rt.ledger.begin(job_id, [u["id"] for u in units])
    if begun.state != RUNNING and outbox.waiting:  # paused or cancelled between two pages:
        flush_outbox(rt, chain, envelope, Outbox(waiting=outbox.waiting))  # the page is parked
    return outcome


def run_phases(batch: Batch, runs: list[UnitRun], outbox: Outbox,
               run_on: bool) -> list[UnitRun]:
    """Every phase up to the close. An interrupt (the soft time limit) stops them where
    they are: what finished stays finished, the rest is retried, the list let go."""
    try:
        runs = prepare(batch, runs)
        runs = parse(batch, fetch(batch, runs))
        runs = save(batch, runs)
        return spawn(batch, runs, outbox, run_on)
    except batch.rt.interrupts:
        log.warning("soft time limit: %d units of %s go back to the queue",
                    sum(r.live for r in runs), batch.step.name)
        flush_outbox(batch.rt, batch.chain, batch.envelope, outbox)
        return runs


def batch_of(rt: Runtime, task: str, envelope: Envelope, chain: Chain,
             retries: int) -> Batch:
    """The context a batch of ``task`` runs in: its step, site, the job's settings."""
    spec = registry.step(task)
    site = registry.site(spec.site)
    settings = launched(rt, envelope["job"]).site_settings(site)
    disabled = rt.settings.resources.disabled_sites
    return Batch(rt, envelope, chain, spec, site, settings,
                 resources_of(site, task, disabled), retries)


def resources_of(site: Site, task: str, disabled: list[str]) -> StepResources | None:
    """What a task's requests go through, or None (then they are fetched as built)."""
    declared = None if site.name in disabled else site.providers
    uses = declared.uses_for(task) if declared is not None else None
    return StepResources(site.name, declared, uses) \
        if declared is not None and uses is not None else None


def isolate(rt: Runtime, chain: Chain, envelope: Envelope,
            runs: list[UnitRun]) -> dict[str, int]:
    """A worker died holding this batch: send each unit alone, so that a unit that
    kills its worker every time ends as poison without taking its batch-mates along."""
    log.warning("batch of %d %s units came back after a worker died; splitting it",
                len(runs), envelope["step"])
    rt.ledger.end_attempt(envelope["job"], [r.unit["id"] for r in runs])
    publisher = Publisher(rt.dispatch, rt.ledger)
    for r in runs:
        publisher.publish(chain, envelope["job"], envelope["step"], [r.unit],
                          envelope["depth"])
    return {"isolated": len(runs)}


def hand_back(rt: Runtime, chain: Chain, envelope: Envelope, outbox: Outbox,
              running: list[Unit], raised: BaseException) -> None:
    """The message is ending in an error: publish what it held back, and the units of a
    page it was running on its own (``running``; the message's own units are the task
    adapter's to requeue). When that fails too (the state plane is away), the error
    that ended the message is the one raised, and the ledger's record of what the
    message carries, read when it comes back, or the reviver, takes over."""
    try:
        flush_outbox(rt, chain, envelope, outbox)
        if running:
            requeue_unfinished(rt, envelope, running, raised)
    except Exception as exc:
        log.warning("could not hand back what a failing message of %s held (%s)",
                    envelope["step"], exc)


def requeue_unfinished(rt: Runtime, envelope: Envelope, units: list[Unit],
                       raised: BaseException | None = None) -> int:
    """The message died (hard time limit, a bug in the loop): send back its unfinished
    units. Their start counts are not taken back, so a unit that keeps killing its
    message ends as a poison unit after ``max_deliveries`` starts; what the message
    raised is recorded with them, so the poison unit's reason is that, not a death."""
    job_id = envelope["job"]
    left = record_raise(rt, envelope, units, raised) if raised is not None else [
        u for u in units if not rt.ledger.is_finished(job_id, u["id"])]
    if left:
        chain = launched(rt, job_id).chain
        Publisher(rt.dispatch, rt.ledger).publish(chain, job_id, envelope["step"], left,
                                                  envelope["depth"])
    return len(left)


def record_raise(rt: Runtime, envelope: Envelope, units: list[Unit],
                 raised: BaseException) -> list[Unit]:
    """Record with the message's unfinished units what it raised (their starts stay
    open); returns those units."""
    job_id = envelope["job"]
    left = [u for u in units if not rt.ledger.is_finished(job_id, u["id"])]
    if left:
        rt.ledger.record_raise(job_id, [u["id"] for u in left], raised_reason(raised))
    return left


def raised_reason(exc: BaseException) -> str:
    """``"ValueError: boom"``: what a poison unit's reason quotes, one line, bounded."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text[:300]}" if text else type(exc).__name__


# -- a list run on in one message ---------------------------------------------------
@dataclass
class PageBudget:
    """How far a message may still run its list on itself: not from a retry (its count
    of retries is not the next page's), and not past a quarter of the soft time limit,
    so that the page in hand ends well before it."""

    pages_left: int
    until: float

    @classmethod
    def of(cls, chain: Chain, step: str, retries: int | None, soft_limit_s: float) -> PageBudget:
        pages = chain.steps[step].inline_next if not retries else 0
        return cls(pages, time.monotonic() + soft_limit_s / 4)

    def allows(self) -> bool:
        return self.pages_left > 0 and time.monotonic() < self.until


def flush_outbox(rt: Runtime, chain: Chain, envelope: Envelope, outbox: Outbox) -> None:
    """Publish whatever the message outbox back: it will not run its list on."""
    publisher = Publisher(rt.dispatch, rt.ledger)
    publisher.flush(chain, envelope["job"], outbox)
    if outbox.pages:
        publisher.publish(chain, envelope["job"], envelope["step"], outbox.pages,
                          envelope["depth"])
        outbox.pages = []


def resume(rt: Runtime, chain: Chain, envelope: Envelope,
           carrier: str) -> tuple[Envelope, list[Unit]]:
    """A message came back whose units are all finished: if it was running its list on
    (its worker died), what it outbox that is still open goes on: its next pages in this
    message (returned), the children that waited for a full message to the queue."""
    job_id = envelope["job"]
    carried = rt.ledger.carried(job_id, carrier).get(carrier, [])
    found = [revived(p) for p in rt.ledger.open_payloads(job_id, carried).values()]
    if not found:
        return envelope, []
    log.warning("message of %s came back: going on with the %d units it outbox",
                envelope["step"], len(found))
    outbox, depth = Outbox(), envelope["depth"]
    for step, at, unit in found:
        if step == envelope["step"] and unit.get("page", 0) > 0:
            outbox.pages.append(unit)
            depth = at
        else:
            outbox.waiting.setdefault((step, at), []).append(unit)
    Publisher(rt.dispatch, rt.ledger).flush(chain, job_id, outbox)
    return {"job": job_id, "step": envelope["step"], "depth": depth}, outbox.pages

