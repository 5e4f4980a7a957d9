"""The data a unit carries through its message's batch: plain types, no I/O.

Site steps use ``Parsed`` (what a parser returns), ``Signal`` (what a hook returns)
and ``UnitContext`` (what a hook sees); ``base_task.CrawlTask`` uses ``Work`` and
``Done`` to follow each unit of a batch from its start to its finish.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from pydantic import BaseModel

from chains.engine import Unit
from exceptions import CrawlError
from external_interface.fetch import Request
from external_interface.ledger import Outcome
from external_interface.providers import Gear
from external_interface.providers.outfit import Outfit
from external_interface.recrawl import Recrawl
from external_interface.storage import Item


class Signal(Enum):
    """What a hook tells the task loop to do next."""

    CONTINUE = "continue"
    SKIP = "skip"  # finish the unit as skipped
    RETRY = "retry"  # treat as a transient failure
    ABORT = "abort"  # fail the unit for good


@dataclass
class Parsed:
    """What a parser returns: items to store, records to fan out from, the next page."""

    items: list[Item] = field(default_factory=list)
    follow: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    next_page: BaseModel | Mapping[str, Any] | None = None

    def records(self, wanted: Container[str] | None = None) -> dict[str, list[dict[str, Any]]]:
        """Fan-out sources by name: item collections and follow lists; only the ``wanted``
        names when given (a leaf step's items are not dumped for nothing)."""
        out: dict[str, list[dict[str, Any]]] = {k: list(v) for k, v in self.follow.items()
                                                if wanted is None or k in wanted}
        for item in self.items:
            if wanted is None or item.collection in wanted:
                out.setdefault(item.collection, []).append(item.model_dump(mode="json"))
        return out

    def next_params(self) -> dict[str, Any] | None:
        if isinstance(self.next_page, BaseModel):
            return self.next_page.model_dump(mode="json")
        return dict(self.next_page) if self.next_page is not None else None


@dataclass(frozen=True)
class UnitContext:
    """What hooks see of the unit being worked on."""

    job_id: str
    step: str
    task: str
    unit_id: str
    params: BaseModel
    depth: int


@dataclass(frozen=True)
class Done:
    """How a unit ended (short of failing): its outcome and the items it stored."""

    outcome: Outcome
    items: int = 0
    unchanged: bool = False


@dataclass(frozen=True)
class FetchPoint:
    """One fetch as the metrics count it: status (0 when no response came), bytes, seconds."""

    status: int
    nbytes: int
    seconds: float


@dataclass
class Work:
    """One unit on its way through its message's batch."""

    unit: Unit
    starts: int
    first: bool
    ctx: UnitContext | None = None
    request: Request | None = None
    recrawl: Recrawl | None = None
    parsed: Parsed | None = None
    fetched: bool = False
    end: Done | None = None  # how it ended, short of failing
    ready: bool = False  # its items are saved and its children registered and published
    error: CrawlError | None = None  # permanent: failed; otherwise retried
    defer: float | None = None  # the site's slot is this far off: sent again with a countdown
    gear: Gear | None = None  # the providers its step uses (None: fetched as built)
    outfit: Outfit | None = None  # what the providers gave its request
    need: str | None = None  # the pool it waits for (cookie, device, proxy)
    fetch: FetchPoint | None = None  # how its fetch went, for the batch's metrics
    parse_s: float | None = None  # how long its parse took

    @property
    def live(self) -> bool:
        return self.end is None and self.error is None and self.defer is None


class HookSignal(CrawlError):
    """Raised inside the unit loop when a hook asks to skip."""
