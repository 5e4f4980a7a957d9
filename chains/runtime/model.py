"""The chain model: a route table of steps and the fan-out links between them. Plain data.

    forum = Chain("forum", start=boards,
                  steps=[boards, Step(board, inline_next=20), thread, user],
                  links=[Link(boards, board), Link(board, thread),
                         Link(thread, user, records="posts")])

A step is named in a chain by its parse function's name (``board``), or by the last
part of its full name when given as ``Step(task="forum.web.board")``; a link names its
ends the same way. A link's ``records`` defaults to the source step's one follow list
(or, without follow lists, its one item collection), and its ``map`` to the fields both
ends share: ``checks.resolve`` fills both in at launch, against the declared steps, and
the job stores the chain as resolved.

A chain is JSON-serialisable: a launch stores it with the job, so a chain built ad hoc
in a shell runs on workers that never imported it. Launching is a function of a chain
and a runtime (``chains.runtime.launch``), not a method.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chains.runtime.step import SiteStep
from external_interface.dedup import RecrawlPolicy
from utils.domains import AllowedDomains

StepRef = SiteStep[Any, Any] | str


def step_key(ref: StepRef) -> str:
    """The name a chain gives a step: its function's name, or a key given as text."""
    return ref.key if isinstance(ref, SiteStep) else ref


class Rule(BaseModel):
    """A page whose URL matches ``pattern`` (a regex, searched) is parsed by ``step`` too,
    on the same response: its items are stored beside the page step's own (Scrapy
    CrawlSpider's ``Rule(LinkExtractor(allow=...), callback=...)``). ``step`` takes the
    page's URL as its input (``{"url": ...}``)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    pattern: str
    step: str = Field(description="The rule's step, '<site>.<platform>.<step>'.")

    def __init__(self, pattern: str | None = None, step: StepRef | None = None, /,
                 **fields: Any) -> None:
        if pattern is not None:
            fields["pattern"] = pattern
        if step is not None:
            fields["step"] = step.name if isinstance(step, SiteStep) else step
        super().__init__(**fields)

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"rule pattern {value!r} is not a regular expression: {exc}") \
                from None
        return value


class Step(BaseModel):
    """One crawl step of a chain: which declared step runs it and how its messages are
    shaped. ``Step(board, batch_size=50)`` or ``Step(task="forum.web.board")``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    task: str = Field(description="The step's full name, '<site>.<platform>.<step>'.")
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
    rules: list[Rule] = Field(
        default_factory=list, description="Pages of this step whose URL matches a rule are "
        "parsed by the rule's step too (a generic crawl's --rule).")

    def __init__(self, step: StepRef | None = None, /, **fields: Any) -> None:
        if step is not None:
            fields["task"] = step.name if isinstance(step, SiteStep) else step
        super().__init__(**fields)

    @property
    def key(self) -> str:
        """The name a chain gives this step by default: the last part of its task."""
        return self.task.rsplit(".", 1)[-1]


class Link(BaseModel):
    """Fan-out: every record named ``records`` in ``src``'s output becomes a ``dst`` unit,
    its input taken from the record by ``map`` (dst input field <- record field)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    src: str
    dst: str
    records: str | None = Field(None, description="An item collection or a follow list of "
                                "``src``; default: its one follow list, or its one item "
                                "collection.")
    map: dict[str, str] | None = Field(None, description="dst input field <- src record "
                                       "field; default: the fields both share.")

    def __init__(self, src: StepRef | None = None, dst: StepRef | None = None, /,
                 **fields: Any) -> None:
        if src is not None:
            fields["src"] = step_key(src)
        if dst is not None:
            fields["dst"] = step_key(dst)
        super().__init__(**fields)


class Chain(BaseModel):
    """Steps and the links between them; ``start`` receives the launch params."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    start: str
    steps: dict[str, Step]
    links: list[Link] = Field(default_factory=list)
    max_depth: int = Field(50, ge=0, description="Units deeper than this are not spawned "
                           "(a link is one level; a next page of the same list is not, nor "
                           "what a same_depth step spawns); 0: the start units' own only.")
    allowed_domains: list[str] = Field(
        default_factory=list, description="When set, a unit whose request, or any redirect "
        "of it, leaves these registrable domains is skipped as off-site (matched with the "
        "public suffix list: shop.example.com allows login.example.com, not example.org).")

    def __init__(self, name: str | None = None, /, **fields: Any) -> None:
        if name is not None:
            fields["name"] = name
        if "start" in fields:
            fields["start"] = step_key(fields["start"])
        if "steps" in fields:
            fields["steps"] = steps_by_key(fields["steps"])
        super().__init__(**fields)

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        """An entry that is a URL or a public suffix fails here, at declaration."""
        AllowedDomains(value)
        return value

    @model_validator(mode="after")
    def _links_name_known_steps(self) -> Chain:
        known = set(self.steps)
        if self.start not in known:
            raise ValueError(f"chain {self.name!r}: start step {self.start!r} is not a step "
                             f"(steps: {', '.join(sorted(known))})")
        for link in self.links:
            for end in (link.src, link.dst):
                if end not in known:
                    raise ValueError(f"chain {self.name!r}: link {link.src} -> {link.dst} "
                                     f"names unknown step {end!r} (steps: "
                                     f"{', '.join(sorted(known))})")
        return self

    def allows(self, url: str) -> bool:
        """True when the URL's host is on an allowed domain, or none is set. The domains
        are compiled once per list (a launch of a million start URLs asks a million
        times), and each origin judged once."""
        return _allowed(tuple(self.allowed_domains)).allows_url(url)

    def links_from(self, step: str) -> list[Link]:
        return [link for link in self.links if link.src == step]

    def recrawling(self, name: str, **policies: RecrawlPolicy) -> Chain:
        """This chain under another name, its steps given recrawl policies by step name:
        the incremental crawl of the same site (``chains/forum.py``)."""
        unknown = set(policies) - set(self.steps)
        if unknown:
            raise ValueError(f"chain {self.name!r} has no step {sorted(unknown)[0]!r}")
        return self.model_copy(update={"name": name, "steps": {
            step: spec.model_copy(update={"recrawl": policies.get(step, spec.recrawl)})
            for step, spec in self.steps.items()}})

    def task_names(self) -> set[str]:
        return {step.task for step in self.steps.values()}


def steps_by_key(steps: Mapping[str, Any] | Iterable[Any]) -> dict[str, Any]:
    """A chain's steps by key: a mapping as given, or a list of declared steps and ``Step``s
    keyed by their function's name (two of one name are refused)."""
    if isinstance(steps, Mapping):
        return dict(steps)
    out: dict[str, Any] = {}
    for item in steps:
        spec = Step(item) if isinstance(item, SiteStep) else item
        key = item.key if isinstance(item, SiteStep) else (
            spec.key if isinstance(spec, Step) else Step.model_validate(spec).key)
        if key in out:
            raise ValueError(f"two steps of the chain are named {key!r}: give them as a dict "
                             "{name: Step(...)} to name them apart")
        out[key] = spec
    return out


@functools.lru_cache(maxsize=256)
def _allowed(domains: tuple[str, ...]) -> AllowedDomains:
    """The compiled ``AllowedDomains`` of a chain's list (its origins' verdicts kept)."""
    return AllowedDomains(domains)
