"""The rows of a chain's route table: its steps and the fan-out links between them.

Plain data, importable by everything that sends units (``dispatch``, ``job_control``)
without the launching that ``model.Chain`` adds; ``steps_of`` reads them back from a
job's stored chain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from external_interface.dedup import RecrawlPolicy


class Step(BaseModel):
    """One crawl step: which task runs it and how its messages are shaped."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field(description="The step's name, '<site>.<platform>.<step>'.")
    batch_size: int = Field(10, ge=1, le=1000, description="Units per message, fetched "
                            "at once in one worker process; a message costs the broker and "
                            "the worker a few ms of CPU whatever it carries.")
    priority: int = Field(5, ge=0, le=9, description="Higher runs sooner (0-9).")
    queue: str | None = Field(None, description="Queue override; default: the task's site.")
    recrawl: RecrawlPolicy | None = Field(
        None, description="Skip units seen within the policy's TTL; None fetches every time.")
    inline_next: int = Field(
        0, ge=0, le=100_000, description="Next pages of this step that one message runs "
        "itself, one after another, before it hands its list back to the queue; 0: every "
        "next page is its own message. Saves a broker round trip and a message's CPU per "
        "page of a long list.")
    same_depth: bool = Field(
        False, description="The units this step spawns stay at its depth instead of one "
        "deeper: a step that only discovers URLs (a sitemap) is not a hop, so the pages it "
        "lists are as deep as the sitemap itself. Such a step must bound its own fan-out "
        "(a sitemap its nesting): max_depth does not.")
    max_units: int | None = Field(
        None, ge=0, description="A job fetches at most this many units of this step (a "
        "generic crawl's --max-pages); past it, units end skipped 'max-units' without a "
        "fetch and spawn nothing. Counted once per unit in Redis (chains.runtime.quota), so "
        "retries and redeliveries do not count twice.")


class Link(BaseModel):
    """Fan-out: every record named ``records`` in ``src``'s output becomes a ``dst`` unit."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    src: str
    records: str = Field(description="An item collection or a named follow list of ``src``.")
    dst: str
    map: dict[str, str] = Field(description="dst input field <- src record field.")


class Routes(Protocol):
    """What sending a step's units needs of a chain: its steps by name."""

    @property
    def steps(self) -> Mapping[str, Step]: ...


@dataclass(frozen=True)
class StoredSteps:
    """The steps of a job's stored chain, without the rest of it."""

    steps: Mapping[str, Step]


def steps_of(chain: Mapping[str, Any]) -> StoredSteps:
    """The steps of a chain as the ledger stores it (``Chain.model_dump``)."""
    return StoredSteps({name: Step.model_validate(spec)
                        for name, spec in chain["steps"].items()})
