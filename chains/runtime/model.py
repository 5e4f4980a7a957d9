"""The chain model: a route table of steps and fan-out links, launched as a job.

    demo = Chain(
        name="demo", start="feed",
        steps={"feed": Step(task="demo.h5.feed"), "user_info": Step(task="demo.h5.user_info")},
        links=[Link(src="feed", records="feed_entries", dst="user_info",
                    map={"user_id": "author_id"})],
    )
    job = demo.launch(page=1)

A chain is plain data (pydantic, JSON-serialisable): launching stores it with the
job, so a chain built ad hoc in a shell runs on workers that never imported it.
Chains are declared in ``chains/<site>.py`` files, one per site; ``all_chains``
finds every ``Chain`` at the top level of those files.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from chains.runtime.launch import launch
from chains.runtime.registry import site_names
from chains.runtime.routes import Link, Step
from external_interface.dedup import RecrawlPolicy
from utils.domains import AllowedDomains

if TYPE_CHECKING:
    from chains.runtime.job import Job

CHAINS = Path(__file__).resolve().parents[1]


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

    @field_validator("allowed_domains")
    @classmethod
    def _domains(cls, value: list[str]) -> list[str]:
        """An entry that is a URL or a public suffix fails here, at declaration."""
        AllowedDomains(value)
        return value

    def allows(self, url: str) -> bool:
        """True when the URL's host is on an allowed domain, or none is set."""
        return AllowedDomains(self.allowed_domains).allows_url(url)

    @model_validator(mode="after")
    def _links_name_known_steps(self) -> Chain:
        known = set(self.steps)
        if self.start not in known:
            raise ValueError(f"chain {self.name!r}: start step {self.start!r} is not a step")
        for link in self.links:
            for end in (link.src, link.dst):
                if end not in known:
                    raise ValueError(f"chain {self.name!r}: link names unknown step {end!r}")
        return self

    def links_from(self, step: str) -> list[Link]:
        return [link for link in self.links if link.src == step]

    def launch(self, **params: Any) -> Job:
        """Start a job from a shell or a script; returns its handle at once.

        Keywords that name a field of a site's settings (``base_url=...``) set it for
        this job; the others are the start step's params.
        """
        return launch(self, params)

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


def chain_modules() -> list[ModuleType]:
    """The ``chains/<site>.py`` files, one per site that has one, imported."""
    return [importlib.import_module(f"chains.{name}") for name in site_names()
            if (CHAINS / f"{name}.py").is_file()]


def all_chains() -> dict[str, Chain]:
    """Every ``Chain`` declared at the top level of a ``chains/<site>.py`` file."""
    found: dict[str, Chain] = {}
    for module in chain_modules():
        for value in vars(module).values():
            if isinstance(value, Chain):
                if value.name in found and found[value.name] is not value:
                    raise ValueError(f"two chains are named {value.name!r}")
                found[value.name] = value
    return found


def get_chain(name: str) -> Chain:
    known = all_chains()
    if name not in known:
        raise KeyError(f"no chain named {name!r}; known: {', '.join(sorted(known)) or 'none'}")
    return known[name]


__all__ = ["Chain", "Link", "Step", "all_chains", "chain_modules", "get_chain"]
