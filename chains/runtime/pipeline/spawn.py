"""The spawn phase: the batch's children registered in one ledger call, then published.

Children come from the chain's links (records of a saved unit mapped to the next
step's input) and from the unit's next page. Registration precedes the parent's
finish, so the job cannot read as finished while work is still reachable; unit ids
are step + params, so a child two parents name is one unit, sent once. A parent that
runs again (its worker died between registering and publishing) sends all its
children again; the first run sends only those new to the ledger.

A step that runs its list on (``Step.inline_next``) holds its new next pages to run
them itself, and holds children back until they fill a message of their step
(``Held``); when the list ends, what waits is published.
"""

from __future__ import annotations

from chains.runtime.dispatch import Held, Publisher
from chains.runtime.pipeline.prepare import Batch, Done, Unchanged, UnitRun
from chains.runtime.units import Unit, by_depth, children


def spawn(batch: Batch, runs: list[UnitRun], held: Held, run_on: bool) -> list[UnitRun]:
    """Every run, the saved ones ``Done`` (or ``Unchanged``) once their children are out."""
    step, chain = batch.envelope["step"], batch.chain
    saved = [r for r in runs if r.live and r.stored is not None and r.parsed is not None]
    publisher = Publisher(batch.rt.dispatch, batch.rt.ledger)
    sources = {link.records for link in chain.links_from(step)}
    for rerun in (False, True):  # children of a parent that runs again are all resent
        kids: dict[str, dict[str, Unit]] = {}  # two parents may name the same child
        for r in (r for r in saved if r.first != rerun):
            assert r.parsed is not None
            found = children(chain, step, r.parsed.records(sources), r.parsed.next_params(),
                             r.unit.get("page", 0))
            for child_step, units in found.items():
                kids.setdefault(child_step, {}).update((u["id"], u) for u in units)
        grouped = {s: list(units.values()) for s, units in kids.items()}
        hop = 0 if chain.steps[step].same_depth else 1
        for depth, group in by_depth(step, batch.envelope["depth"], grouped, hop).items():
            publisher.spawn(chain, batch.job_id, group, depth, rerun,
                            held if run_on else None, step)
    if not held.pages:
        publisher.flush(chain, batch.job_id, held)
    out = {id(r) for r in saved}
    return [_done(r) if id(r) in out else r for r in runs]


def _done(r: UnitRun) -> UnitRun:
    return r.ended(Unchanged() if r.unchanged else Done(r.stored or 0))
