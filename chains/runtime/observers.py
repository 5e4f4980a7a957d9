"""The runtime's own side concerns, as observers of what each batch came to, and the one
place every observer is told.

The close phase finishes a batch in the ledger and reports it (``BatchClosed``); these
listen, on the same ``Observer`` hooks a user's observers use (``extensions``):

    MetricsFeed        each batch's points into the cluster-wide metrics
    ThrottleFeedback   what the fetches met (latency, status, Retry-After), per bucket,
                       to the adaptive throttle
    PoolRefill         the refill chains of the pools the batch found dry or low
    RequesterCredit    what a refill job spent, counted in the job that asked for it

``announce`` calls every observer of a batch in order; one that raises is logged and
the rest still hear it: an observer never changes a unit's fate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING

from chains.runtime import registry
from chains.runtime.extensions import BatchClosed, JobEvent, Observer, UnitClosed, notify
from chains.runtime.launch import launch
from chains.runtime.metrics import Metrics, Tally
from external_interface.politeness.throttle import Observation

if TYPE_CHECKING:
    from chains.runtime.launch import Launcher
    from chains.runtime.ledger import Ledger
    from external_interface.politeness.throttle import Throttle
    from external_interface.providers.bundle import Providers

DONE_OUTCOMES = frozenset({"done", "unchanged", "skipped", "gone"})
CREDITED = ("requests", "bans", "rotations", "captcha_solves")


def announce(observers: Sequence[Observer], batch: BatchClosed, ended: str | None,
             passing: tuple[type[BaseException], ...] = ()) -> None:
    """Tell every observer what the batch came to: ``batch_closed``, then each unit's
    ``unit_done`` or ``unit_failed``, then ``job_ended`` when it finished the job."""
    for observer in observers:
        notify(observer.batch_closed, batch, passing)
        for unit in batch.units:
            if unit.outcome in DONE_OUTCOMES:
                notify(observer.unit_done, unit, passing)
            elif unit.outcome == "failed":
                notify(observer.unit_failed, unit, passing)
        if ended:
            notify(observer.job_ended, JobEvent(batch.job_id, batch.chain, ended), passing)


class MetricsFeed(Observer):
    """Each batch's points (fetches, parses, items, outcomes) written in one round trip."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def batch_closed(self, batch: BatchClosed) -> None:
        self.metrics.send(tally(batch), batch.job_id)


def tally(batch: BatchClosed) -> Tally:
    """The batch's points for the cluster-wide metrics (the ledger stays the exact count)."""
    out = Tally(batch.task).started(len(batch.units))
    for unit in batch.units:
        if unit.status is not None:
            out.fetched(unit.status, unit.nbytes, unit.fetch_s or 0.0)
        if unit.parse_s is not None:
            out.parsed(unit.parse_s)
    out.stored(sum(unit.items for unit in batch.units))
    ended: Counter[str] = Counter(
        "done" if u.outcome == "unchanged" else u.outcome for u in batch.units
        if u.outcome in DONE_OUTCOMES or u.outcome == "failed")
    out.units_finished(ended, Counter(u.error or "" for u in batch.units
                                      if u.outcome == "failed"))
    again = [u for u in batch.units if u.outcome in ("retry", "rotate")]
    return out.retried(len(again), rotated=sum(u.rotated for u in again))


class ThrottleFeedback(Observer):
    """The adaptive throttle hears what the batch's fetches met: one call per bucket. A
    fetch through a pooled proxy is not fed to the site's throttle: a site limits each
    exit, and the proxy's own rest and per-exit bucket handle what it answers."""

    def __init__(self, throttle: Throttle) -> None:
        self.throttle = throttle

    def batch_closed(self, batch: BatchClosed) -> None:
        seen: dict[str, tuple[UnitClosed, list[Observation]]] = {}
        for unit in batch.units:
            if unit.status is None or unit.bucket is None or unit.proxy:
                continue
            found = seen.setdefault(unit.bucket, (unit, []))
            found[1].append(Observation(unit.fetch_s or 0.0, unit.status, unit.retry_after_s,
                                        unit.ended_at, unit.url))
        for key, (first, observed) in seen.items():
            self.throttle.observe(key, observed, first.ceiling)


class PoolRefill(Observer):
    """Launch the refill chains of the pools a batch found dry or low, against the same
    server as the job that ran dry (its site settings)."""

    def __init__(self, providers: Providers, launcher: Launcher) -> None:
        self.providers = providers
        self.launcher = launcher

    def batch_closed(self, batch: BatchClosed) -> None:
        if batch.providers:
            self.refill(batch)

    def refill(self, batch: BatchClosed) -> list[str]:
        """The refill jobs launched for the batch's dry or low pools; their ids."""
        declared = registry.site(batch.site).providers
        kinds = {u.need for u in batch.units if u.need} | {
            kind for u in batch.units for kind in u.low}
        asked_by = {"job": batch.job_id, "step": batch.step}
        jobs = []
        for kind in sorted(kinds):
            plan = declared.refills.get(kind) if declared is not None else None
            if plan is None:
                continue
            for params in self.providers.refills.claim(kind, batch.site, plan, asked_by):
                jobs.append(launch(registry.chain(plan.chain), params, self.launcher,
                                   settings={batch.site: dict(batch.settings)}).job_id)
        return jobs


class RequesterCredit(Observer):
    """What a refill job spent (requests, bans, rotations, captchas) counts in the job
    that asked for it too."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger

    def batch_closed(self, batch: BatchClosed) -> None:
        spent = {name: batch.counts[name] for name in CREDITED if batch.counts.get(name)}
        if batch.providers and spent:
            self.ledger.credit_requester(batch.job_id, spent)


def builtin_observers(launcher: Launcher, providers: Providers, throttle: Throttle | None,
                      metrics: Metrics) -> tuple[Observer, ...]:
    """The runtime's own observers, in the order they hear a batch."""
    return (MetricsFeed(metrics), *([ThrottleFeedback(throttle)] if throttle else []),
            PoolRefill(providers, launcher), RequesterCredit(launcher.ledger))
