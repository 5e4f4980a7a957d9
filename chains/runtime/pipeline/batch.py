"""The values every phase passes on: a batch, its units' records and their fates.

A message's batch of units goes ``prepare -> fetch -> parse -> save -> spawn ->
close`` (a module each, beside this one); each phase is a function from the batch's
runs to the next runs. A ``UnitRun`` is one unit's record, frozen, filled phase by
phase; its ``fate`` says how it ends, and a unit with a fate is passed along untouched
by later phases. The fate is a closed type the close phase matches on:

    Done(items, change)         saved, its children registered and published; with a
                                recrawl policy, ``change`` says new or changed
    Unchanged()                 fetched, same content as last time: nothing stored
    Skipped(reason)             not fetched (fresh, a middleware, robots, off-site), or
                                of a content type the step does not parse; a fresh
                                unit's stored children are spawned all the same
    Gone(reason)                stored by an earlier crawl, now answering 404 or 410
    RetryAfter(seconds, reason) not now: a backoff (transient error), a wait (a slot,
                                a pool), a rotation onto a fresh resource
    Failed(error, message)      for good, with the reason kept in the ledger
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import TYPE_CHECKING, Any, Literal

from exceptions import CrawlError, PermanentError, RotateError, TransientError
from utils.domains import AllowedDomains

if TYPE_CHECKING:
    from pydantic import BaseModel

    from chains.runtime.context import Runtime
    from chains.runtime.extensions import ItemPipeline, Middleware, Observer, UnitContext
    from chains.runtime.model import Chain
    from chains.runtime.site import Site
    from chains.runtime.step import Parsed, SiteStep
    from chains.runtime.tree import Spawned
    from chains.runtime.units import Envelope, Unit
    from config import Politeness
    from external_interface import recrawl
    from external_interface.http import Request, Response
    from external_interface.providers.declare import StepResources
    from external_interface.providers.leases import Leases


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
    cached: bool = False  # replayed by the development cache: no request left
    rendered: bool = False  # by the browser client


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
    bounds: Bounds | None = None  # its fetch's bucket and ceiling (once admitted)
    leases: Leases | None = None  # what the providers gave its request
    need: str | None = None  # the pool it waits for (cookie, device, proxy)
    fetch: FetchPoint | None = None  # set when a request went out
    response: Response | None = None  # dropped once parsed
    parsed: Parsed[Any] | None = None
    parse_s: float | None = None
    children: dict[str, list[Unit]] | None = None  # what it spawns now, by step (parsed)
    stored: int | None = None  # items written by the save (None: not saved)
    dropped: tuple[str, ...] = ()  # why the pipelines dropped each item they dropped
    unchanged: bool = False
    fate: Fate | None = None
    error: CrawlError | None = None
    render: bool = False  # a render="auto" unit sent to the browser after its plain page

    @property
    def live(self) -> bool:
        return self.fate is None

    def replace(self, **changes: Any) -> UnitRun:
        """A copy with ``changes``: ``dataclasses.replace`` without re-running ``__init__``
        (a unit's record is copied several times per phase, for every unit of a crawl)."""
        copy = object.__new__(UnitRun)
        object.__setattr__(copy, "__dict__", {**self.__dict__, **changes})
        return copy

    def ended(self, fate: Fate, error: CrawlError | None = None) -> UnitRun:
        return self.replace(fate=fate, error=error, response=None)

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
    resources: StepResources | None  # providers its requests go through (None: as built)
    retries: int  # retries this message has had (Celery's count)

    @property
    def allowed(self) -> AllowedDomains:
        """The job's allowed domains, matched on registrable domains (start and redirects)."""
        return allowed_domains(tuple(self.chain.allowed_domains))

    @property
    def job_id(self) -> str:
        return self.envelope["job"]

    @cached_property
    def pipelines(self) -> tuple[ItemPipeline, ...]:
        """The cluster's item pipelines, then the site's."""
        return (*self.rt.pipelines, *self.site.pipelines)

    @cached_property
    def middlewares(self) -> tuple[Middleware, ...]:
        """The cluster's middlewares, then the site's."""
        return (*self.rt.middlewares, *self.site.middlewares)

    @cached_property
    def observers(self) -> tuple[Observer, ...]:
        """The runtime's own observers and the cluster's, then the site's."""
        return (*self.rt.observers, *self.site.observers)


@lru_cache(maxsize=64)
def allowed_domains(domains: tuple[str, ...]) -> AllowedDomains:
    """One matcher per set of domains a process meets (built once per job, in effect)."""
    return AllowedDomains(domains)


@dataclass(frozen=True)
class Bounds:
    """What a unit's fetch is under: the bucket it takes its slot in (and the throttle
    key), and the hard limit above any rate the throttle sets there (None: none)."""

    bucket: str
    ceiling: Politeness | None
