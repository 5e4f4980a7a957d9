"""What a crawler engineer adds to the runtime, in Scrapy's words: item pipelines, request
and response middlewares, and observers of what the runtime does.

    class Prices(ItemPipeline):
        def process_item(self, item, unit):
            if isinstance(item, Product) and item.price is None:
                raise DropItem("no price")
            return item

    class Locale(Middleware):
        def process_request(self, request, unit):
            return request.replace(headers={**request.headers, "Accept-Language": "fr"})

    class Alerts(Observer):
        def unit_failed(self, unit):
            notify(f"{unit.url}: {unit.reason}")

    SITE = Site("shop", pipelines=[Prices()], middlewares=[Locale()], observers=[Alerts()])

Every hook is a documented no-op: subclass and override what you need. A site declares
its own on its ``Site``; the cluster's own apply to every site (``PIPELINES``,
``MIDDLEWARES``, ``OBSERVERS``: ``module:attribute`` references, built once per
process), before the site's. They run in the worker, several threads of a process
calling them at once: keep them thread-safe and quick.

- **Item pipelines**, in order, between the parse and the store: each gets the item the
  one before returned. Return it (changed, enriched: a subclass of its model adds
  fields, ``Post`` -> ``EnrichedPost(**post.model_dump(), words=...)``; another
  collection routes it), or raise ``DropItem(reason)``: the item is not stored, and the
  job counts it by reason (``dropped`` in its summary). Links fan out from what the
  parse returned, not from what the pipelines made of it.
- **Middlewares**, in order: ``process_request`` before the fetch (before the resource
  providers, so a signature still goes last), ``process_response`` after the status and
  ban checks accepted the response, before the step parses it. To end the unit instead,
  raise: ``SkipUnit(reason)`` (skipped), a ``TransientError`` (retried with backoff), a
  ``PermanentError`` (failed for good).
- **Observers** hear what happened, after it is durable: ``job_started`` (in the
  launching process), ``unit_done`` and ``unit_failed`` (per unit, in the worker that
  closed it), ``batch_closed`` (every batch's outcome: what the runtime's own metrics,
  adaptive throttle, pool refills and captcha credit listen to), ``job_ended`` (in the
  worker that finished the job's last unit). An observer that raises is logged and
  skipped: it never changes a unit's fate.
"""

from __future__ import annotations

import importlib
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import BaseModel

from chains.runtime.site_settings import SiteSettings

if TYPE_CHECKING:
    from config import Politeness
    from external_interface.http import Request, Response
    from external_interface.storage import Item

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass(frozen=True)
class UnitContext:
    """What a parse function, a pipeline or a middleware sees of the unit at hand."""

    job_id: str
    step: str  # the chain's name for the step
    task: str  # the step's full name, ``site.platform.step``
    unit_id: str
    params: BaseModel
    depth: int
    settings: SiteSettings


class DropItem(Exception):
    """Raised by an item pipeline: the item is not stored; ``reason`` is counted."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason[:100]


class ItemPipeline:
    """One stage between the parse and the store (see the module docstring)."""

    def process_item(self, item: Item, unit: UnitContext) -> Item:
        """The item to store (this one, changed, or another), or raise ``DropItem``."""
        return item


class Middleware:
    """Changes a request before its fetch, or a response before its parse."""

    def process_request(self, request: Request, unit: UnitContext) -> Request:
        """The request to fetch; raise ``SkipUnit`` or a ``CrawlError`` to end the unit."""
        return request

    def process_response(self, response: Response, unit: UnitContext) -> Response:
        """The response to parse; raise ``SkipUnit`` or a ``CrawlError`` to end the unit."""
        return response


Outcome = Literal["done", "unchanged", "skipped", "gone", "failed", "retry", "wait", "rotate"]


@dataclass(frozen=True)
class UnitClosed:
    """How one unit of a batch ended (or went back to the queue), as the close decided.

    ``url`` is masked; ``error`` an error class name, ``reason`` its message. The fetch's
    figures are set when a request went out: ``status`` (0: no response), ``nbytes``,
    ``fetch_s``, ``ended_at`` (monotonic), the ``retry_after_s`` it carried; ``bucket``
    and ``ceiling`` are the politeness it was fetched under, ``proxy`` the pooled exit
    it went through. ``need`` is the pool it waits for, ``low`` the pools its leases
    found running low.
    """

    job_id: str
    step: str
    task: str
    unit_id: str
    url: str
    outcome: Outcome
    items: int = 0
    error: str | None = None
    reason: str | None = None
    change: str | None = None  # "new" or "changed", with a recrawl policy
    status: int | None = None
    nbytes: int = 0
    fetch_s: float | None = None
    ended_at: float | None = None
    retry_after_s: float | None = None
    parse_s: float | None = None
    bucket: str | None = None
    ceiling: Politeness | None = None
    proxy: str | None = None
    need: str | None = None
    low: tuple[str, ...] = ()
    rotated: bool = False  # it goes back because a resource it used was burnt


@dataclass(frozen=True)
class BatchClosed:
    """What one batch of a step came to: its units and the job's counts it added.
    ``settings`` are the job's site settings (a refill launched for the job uses them);
    ``providers`` says whether the step's requests went through resource providers."""

    job_id: str
    chain: str
    site: str
    step: str
    task: str
    units: tuple[UnitClosed, ...]
    counts: Mapping[str, int]
    settings: Mapping[str, Any] = field(default_factory=dict)
    providers: bool = False


@dataclass(frozen=True)
class JobEvent:
    """A job that started or ended: its chain's name and its state then."""

    job_id: str
    chain: str
    state: str


class Observer:
    """Hears what the runtime did (see the module docstring); every hook a no-op."""

    def job_started(self, job: JobEvent) -> None:
        """A job was launched and its start units are queued."""

    def batch_closed(self, batch: BatchClosed) -> None:
        """A batch was closed: its finishes are in the ledger, its retries scheduled."""

    def unit_done(self, unit: UnitClosed) -> None:
        """A unit ended done, unchanged, skipped or gone: its items are durable."""

    def unit_failed(self, unit: UnitClosed) -> None:
        """A unit failed for good; ``unit.reason`` says why."""

    def job_ended(self, job: JobEvent) -> None:
        """The job's last unit finished (``finished`` or ``finished_with_failures``)."""


def notify(hook: Callable[[Any], None], event: Any,
           passing: tuple[type[BaseException], ...] = ()) -> None:
    """Call one observer's hook; an error in it is logged, never raised (``passing``, the
    worker's interrupts, excepted): an observer never changes a unit's fate or a launch."""
    try:
        hook(event)
    except passing:
        raise
    except Exception:
        log.exception("observer hook %s failed; the other observers still hear of it",
                      getattr(hook, "__qualname__", hook))


def load(ref: str, kind: type[T], setting: str) -> T:
    """The extension a ``module:name`` reference names: an instance, or a class built with
    no arguments. ``ValueError`` names the setting, the reference and the fix."""
    module, _, name = ref.partition(":")
    if not module or not name:
        raise ValueError(f"{setting}: {ref!r} is not a reference: write module:name "
                         "(mypackage.pipelines:Prices)")
    try:
        found = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise ValueError(f"{setting}: cannot load {ref!r} ({type(exc).__name__}: {exc}); "
                         "is the module importable on every worker?") from None
    made = found() if isinstance(found, type) else found
    if not isinstance(made, kind):
        raise ValueError(f"{setting}: {ref!r} is a {type(made).__name__}, not a "
                         f"{kind.__name__} (subclass chains.api.{kind.__name__})")
    return made
