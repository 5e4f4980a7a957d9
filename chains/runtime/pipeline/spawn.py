"""The spawn phase: the batch's children registered in one ledger call, then published.

Children come from the chain's links (records of a saved unit mapped to the next
step's input) and from the unit's next page (``UnitRun.children``, built by the save).
Registration precedes the parent's finish, so the job cannot read as finished while
work is still reachable; unit ids are step + params, so a child two parents name is
one unit, sent once. A parent whose earlier start died (its worker may have died
between registering and publishing: ``starts`` > 1) sends all its children again; any
other run sends only those new to the ledger, a unit that waited or retried before
included (another parent may have sent a child they share).

On a step with a recrawl policy the phase also keeps the tree (``chains.runtime.tree``):
a unit skipped as fresh spawns the children it had at its last fetch, so the crawl
goes on below it; a fetched unit's children are stored when they changed, and the
units it no longer leads to (with their own stored descendants) are recorded as
dropped: those the job does not reach another way count as ``gone``. A unit stored
by an earlier crawl whose page now answers 404 or 410 ends ``Gone``, not failed.

A step that runs its list on (``Step.inline_next``) holds its new next pages to run
them itself, and holds children back until they fill a message of their step
(``Outbox``); when the list ends, what waits is published.
"""

from __future__ import annotations

from typing import Any

from chains.runtime import registry
from chains.runtime.dispatch import Outbox, Publisher
from chains.runtime.pipeline.batch import (
    Batch,
    Done,
    Failed,
    Gone,
    Skipped,
    Unchanged,
    UnitRun,
)
from chains.runtime.tree import Spawned, StepUnit, Tree
from chains.runtime.units import Unit, by_depth
from exceptions import CrawlError, NotFound
from exceptions import Gone as GoneStatus
from utils.urls import redact_url

GONE_ERRORS = frozenset({NotFound.__name__, GoneStatus.__name__})


def spawn(batch: Batch, runs: list[UnitRun], outbox: Outbox, run_on: bool) -> list[UnitRun]:
    """Every run, the saved ones ``Done`` (or ``Unchanged``) once their children are out."""
    step, chain = batch.envelope["step"], batch.chain
    saved = [r for r in runs if r.live and r.stored is not None and r.children is not None]
    replayed = [r for r in runs if isinstance(r.fate, Skipped) and r.fate.reason == "fresh"
                and r.before is not None]
    publisher = Publisher(batch.rt.dispatch, batch.rt.ledger)
    for rerun in (False, True):  # children of a parent that runs again are all resent
        by_step: dict[str, dict[str, Unit]] = {}  # two parents may name the same child
        for r in (r for r in [*saved, *replayed] if (r.starts > 1) == rerun):
            found = r.children if r.children is not None else \
                r.before.children if r.before else {}
            for child_step, units in found.items():
                by_step.setdefault(child_step, {}).update((u["id"], u) for u in units)
        grouped = {s: list(units.values()) for s, units in by_step.items()}
        hop = 0 if chain.steps[step].same_depth else 1
        for depth, group in by_depth(step, batch.envelope["depth"], grouped, hop).items():
            publisher.spawn(chain, batch.job_id, group, depth, rerun,
                            outbox if run_on else None, step)
    if not outbox.pages:
        publisher.flush(chain, batch.job_id, outbox)
    runs = [_gone(r) for r in runs]
    if chain.steps[step].recrawl is not None:
        _keep_tree(batch, saved, [r for r in runs if isinstance(r.fate, Gone)])
    out = {id(r) for r in saved}
    return [_done(r) if id(r) in out else r for r in runs]


def _gone(r: UnitRun) -> UnitRun:
    """A page an earlier crawl stored that now answers 404 or 410 is gone, not failed."""
    if (isinstance(r.fate, Failed) and r.fate.error in GONE_ERRORS
            and r.recrawl is not None and r.recrawl.seen is not None):
        return r.ended(Gone(r.fate.message), r.error)
    return r


def _keep_tree(batch: Batch, saved: list[UnitRun], gone: list[UnitRun]) -> None:
    """Store the children that changed; record what the crawl no longer reaches."""
    changed = {r.unit["id"]: Spawned(r.children) for r in saved if r.children is not None
               and (r.before is None or r.before.ids() != Spawned(r.children).ids())}
    dropped: dict[str, StepUnit] = {}
    for r in saved:
        if r.before is not None and r.children is not None:
            now = Spawned(r.children).ids()
            dropped.update((u, s) for u, s in r.before.units().items() if u not in now)
    for r in gone:
        if r.before is not None:
            dropped.update(r.before.units())
    tree = Tree(batch.rt.redis, batch.chain.name)
    tree.save(changed)
    if dropped:
        batch.rt.ledger.drop(batch.job_id, {
            u: (step, unit_url(batch, step, unit["params"]))
            for u, (step, unit) in tree.descendants(dropped).items()})


def unit_url(batch: Batch, step: str, params: dict[str, Any]) -> str:
    """The URL a unit of ``step`` fetched, rebuilt from its params (credentials masked),
    for the summary's list of gone units; "" when it cannot be built."""
    try:
        spec = registry.step(batch.chain.steps[step].task)
        settings = batch.settings if spec.site == batch.site.name else \
            registry.site(spec.site).stored_settings(
                batch.rt.ledger.settings_of(batch.job_id).get(spec.site, {}))
        return redact_url(spec.request(spec.params(params), settings).full_url)
    except (CrawlError, KeyError, ValueError):
        return ""


def _done(r: UnitRun) -> UnitRun:
    if r.unchanged:
        return r.ended(Unchanged())
    if r.recrawl is None:
        return r.ended(Done(r.stored or 0))
    return r.ended(Done(r.stored or 0, "new" if r.recrawl.seen is None else "changed"))
