"""The first phase, and the values every phase passes on.

A message's batch of units goes ``prepare -> fetch -> parse -> save -> spawn ->
close``; each phase is a function from the batch's runs to the next runs. A
``UnitRun`` is one unit's record, frozen, filled phase by phase; its ``fate`` says
how it ends, and a unit with a fate is passed along untouched by later phases. The
fate is a closed type the close phase matches on:

    Done(items, change)         saved, its children registered and published; with a
                                recrawl policy, ``change`` says new or changed
    Unchanged()                 fetched, same content as last time: nothing stored
    Skipped(reason)             not fetched (fresh, a hook, robots, off-site); a fresh
                                unit's stored children are spawned all the same
    Gone(reason)                stored by an earlier crawl, now answering 404 or 410
    RetryAfter(seconds, reason) not now: a backoff (transient error), a wait (a slot,
                                a pool), a rotation onto a fresh resource
    Failed(error, message)      for good, with the reason kept in the ledger

Prepare itself: the poison check (a unit whose worker died too often), params
validated (invalid ones fail for good), the request built under the site's default
browser headers, the job's allowed domains, the recrawl decision for the whole batch
in one dedup round trip and one tree round trip (``chains.runtime.tree``: a fresh unit
is skipped only when its children are known, and never when it was the last page of
its list and the policy says ``last_page_volatile``), robots.txt (``pipeline.robots``)
and the politeness each fetch will be under (``pipeline.polite``: its bucket and
ceiling), both looked up once per origin of the batch, and the job's cap on the step's
units (``Step.max_units``, one round trip: ``chains.runtime.quota``).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Literal

from chains.runtime.pipeline import polite, robots
from chains.runtime.quota import Quota
from chains.runtime.site import Signal, UnitContext
from chains.runtime.tree import Spawned, Tree
from exceptions import (
    CrawlError,
    OffSite,
    PermanentError,
    RotateError,
    TransientError,
)
from external_interface import recrawl
from utils.domains import AllowedDomains

if TYPE_CHECKING:
    from pydantic import BaseModel

    from chains.runtime.context import Runtime
    from chains.runtime.model import Chain
    from chains.runtime.site import Hooks, Site
    from chains.runtime.step import Parsed, SiteStep
    from chains.runtime.units import Envelope, Unit
    from external_interface.http import Request, Response
    from external_interface.providers.declare import Gear
    from external_interface.providers.outfit import Outfit


# -- fates ------------------------------------------------------------------------
@dataclass(frozen=True)
class Done:
    items: int
    change: Literal["new", "changed"] | None = None  # None: the step keeps no recrawl marks


@dataclass(frozen=True)
class Unchanged:
    pass


@dataclass(frozen=True)
class Skipped:
    reason: str


@dataclass(frozen=True)
class Gone:
    reason: str


@dataclass(frozen=True)
class RetryAfter:
    """Not now. ``seconds`` None lets the backoff decide; ``kind`` says what it spends:
    a retry (``backoff``), nothing (``wait`` for a slot or a pool), or a rotation."""

    seconds: float | None
    reason: str
    kind: Literal["backoff", "wait", "rotate"] = "backoff"


@dataclass(frozen=True)
class Failed:
    error: str  # the error's class name: a bounded label
    message: str

    @property
    def reason(self) -> str:
        return f"{self.error}: {self.message}"


Fate = Done | Unchanged | Skipped | Gone | RetryAfter | Failed


def fate_of(error: CrawlError) -> Failed | RetryAfter | Skipped:
    """What an error's branch of the tree says to do (``exceptions``): an error with a
    ``skip_reason`` (off-site) skips the unit; a transient one's Retry-After is its wait."""
    skip = getattr(error, "skip_reason", None)
    if skip:
        return Skipped(skip)
    if isinstance(error, PermanentError):
        return Failed(type(error).__name__, str(error))
    if isinstance(error, RotateError):
        return RetryAfter(0.0, error.reason, "rotate")
    advised = error.retry_after if isinstance(error, TransientError) else None
    return RetryAfter(advised, error.reason)


def obey(hook: str, signal: Signal) -> Fate | None:
    """A hook's answer as a fate; None to go on."""
    if signal is Signal.SKIP:
        return Skipped(hook)
    if signal is Signal.RETRY:
        return RetryAfter(None, f"{hook} asked to retry")
    if signal is Signal.ABORT:
        return Failed("PermanentError", f"{hook} aborted the unit")
    return None


# -- the values -----------------------------------------------------------------------
@dataclass(frozen=True)
class FetchPoint:
    """One fetch as the metrics and the throttle count it: status (0 when no response
    came), bytes, seconds, the Retry-After it carried, when it ended (monotonic)."""

    status: int
    nbytes: int
    seconds: float
    retry_after_s: float | None = None
    ended: float | None = None


@dataclass(frozen=True)
class UnitRun:
    """One unit on its way through its message's batch; ``fate`` None while it goes on.
    ``error`` is what ended it, when an error did (providers and metrics read it)."""

    unit: Unit
    starts: int  # open starts in the ledger, this one counted: > 1 after a worker died
    first: bool  # the unit's first start in its job
    ctx: UnitContext | None = None
    request: Request | None = None
    recrawl: recrawl.Recrawl | None = None
    before: Spawned | None = None  # what it spawned at its last fetch (steps with a policy)
    bounds: polite.Bounds | None = None  # its fetch's bucket and ceiling (once admitted)
    outfit: Outfit | None = None  # what the providers gave its request
    need: str | None = None  # the pool it waits for (cookie, device, proxy)
    fetch: FetchPoint | None = None  # set when a request went out
    response: Response | None = None  # dropped once parsed
    parsed: Parsed[Any] | None = None
    parse_s: float | None = None
    kids: dict[str, list[Unit]] | None = None  # what it spawns now, by step (once parsed)
    stored: int | None = None  # items written by the save (None: not saved)
    unchanged: bool = False
    fate: Fate | None = None
    error: CrawlError | None = None

    @property
    def live(self) -> bool:
        return self.fate is None

    def but(self, **changes: Any) -> UnitRun:
        """A copy with ``changes``: ``dataclasses.replace`` without re-running ``__init__``
        (a unit's record is copied several times per phase, for every unit of a crawl)."""
        copy = object.__new__(UnitRun)
        object.__setattr__(copy, "__dict__", {**self.__dict__, **changes})
        return copy

    def ended(self, fate: Fate, error: CrawlError | None = None) -> UnitRun:
        return self.but(fate=fate, error=error, response=None)

    def failed(self, error: CrawlError) -> UnitRun:
        return self.ended(fate_of(error), error)


@dataclass(frozen=True)
class Batch:
    """What the units of one batch share: the job's chain and site settings, the step."""

    rt: Runtime
    envelope: Envelope
    chain: Chain
    step: SiteStep[Any, Any]
    site: Site
    settings: BaseModel
    gear: Gear | None  # the providers its requests go through (None: fetched as built)
    retries: int  # retries this message has had (Celery's count)

    @property
    def allowed(self) -> AllowedDomains:
        """The job's allowed domains, matched on registrable domains (start and redirects)."""
        return allowed_domains(tuple(self.chain.allowed_domains))

    @property
    def job_id(self) -> str:
        return self.envelope["job"]

    @property
    def hooks(self) -> Hooks:
        return self.site.hooks


@lru_cache(maxsize=64)
def allowed_domains(domains: tuple[str, ...]) -> AllowedDomains:
    """One matcher per set of domains a process meets (built once per job, in effect)."""
    return AllowedDomains(domains)


# -- the phase -----------------------------------------------------------------------
def prepare(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Poison check, params, requests, then the recrawl decision, robots.txt and the
    job's cap on the step, of every unit."""
    runs = _recrawl(batch, [_prepare_one(batch, r) for r in runs])
    return _within_cap(batch, _obey_robots(batch, runs))


def _recrawl(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Fresh units skipped (their stored children known), the others planned."""
    step = batch.envelope["step"]
    policy = batch.chain.steps[step].recrawl
    if policy is None:
        return runs
    live = [r for r in runs if r.live and r.request is not None]
    plans = recrawl.plan(batch.rt.dedup, policy, [
        (r.request, r.first, r.unit.get("page", 0) == 0) for r in live if r.request])
    before = Tree(batch.rt.redis, batch.chain.name).load([r.unit["id"] for r in live])
    decided = {}
    for r, plan, spawned in zip(live, plans, before, strict=True):
        skip = plan is not None and plan.skip and spawned is not None and not (
            policy.last_page_volatile and not spawned.has_next(step, r.unit.get("page", 0)))
        decided[id(r)] = (plan, spawned, skip)
    out = []
    for r in runs:
        plan, spawned, skip = decided.get(id(r), (None, None, False))
        r = r.but(recrawl=plan, before=spawned)
        out.append(r.ended(Skipped("fresh")) if skip else r)
    return out


def _obey_robots(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Each live unit with its politeness ``Bounds``, or ended when robots.txt refuses its
    URL (for good, or for now); each origin's rules and ceiling looked up once."""
    live = [r for r in runs if r.live and r.request is not None]
    if not live:
        return runs
    urls = [r.request.full_url for r in live if r.request is not None]
    verdicts = robots.verdicts(batch, urls)
    bounds = polite.bounds(batch, urls, [v.crawl_delay if v else None for v in verdicts])
    decided = {}
    for r, url, verdict, bound in zip(live, urls, verdicts, bounds, strict=True):
        refused = robots.refusal(batch, url, verdict)
        if refused is None:
            decided[id(r)] = r.but(bounds=bound)
        elif refused.wait_s is None:
            decided[id(r)] = r.ended(Skipped(refused.reason))
        else:
            decided[id(r)] = r.ended(RetryAfter(refused.wait_s, refused.reason, "wait"))
    return [decided.get(id(r), r) for r in runs]


def _within_cap(batch: Batch, runs: list[UnitRun]) -> list[UnitRun]:
    """Live units past the job's cap on the step's units end skipped, unfetched."""
    cap = batch.chain.steps[batch.envelope["step"]].max_units
    live = [r for r in runs if r.live]
    if cap is None or not live:
        return runs
    admitted = Quota(batch.rt.redis).claim(batch.job_id, batch.envelope["step"], cap,
                                           [r.unit["id"] for r in live])
    refused = {id(r) for r, ok in zip(live, admitted, strict=True) if not ok}
    return [r.ended(Skipped("max-units")) if id(r) in refused else r for r in runs]


def _prepare_one(batch: Batch, r: UnitRun) -> UnitRun:
    limit = batch.rt.settings.task.max_deliveries
    if r.starts > limit:
        return r.failed(PermanentError(
            f"poison unit: its worker died {r.starts - 1} times while running it"))
    envelope = batch.envelope
    try:
        params = batch.step.params(r.unit["params"])
        ctx = UnitContext(envelope["job"], envelope["step"], batch.step.name, r.unit["id"],
                          params, envelope["depth"], batch.settings)  # type: ignore[arg-type]
        request = batch.site.dress(batch.step.request(params, batch.settings),
                                   batch.rt.settings.headers, r.unit["id"])
        if not batch.allowed.allows_url(request.url):
            raise OffSite(f"{request.url} is outside the job's allowed domains",
                          url=request.url)
    except PermanentError as exc:
        return r.failed(exc)
    return r.but(ctx=ctx, request=request)
