"""What each unit of a chain spawned when it was last fetched, kept across jobs.

A recrawl skips a unit whose page is still fresh (``Step.recrawl``), but the tree
under it may not be: new replies on the last page of a thread three pages down a
list that did not change. So a fetched unit's children are stored, by unit id (step
+ params: the same in every job of the chain), and a skipped unit replays them from
here: each child then decides by its own policy whether to fetch. The stored record
also says whether the unit had a next page (``last_page_volatile`` refetches a list's
last page, where new rows land), and what a refetched parent no longer leads to:
those units and their own stored descendants are reported ``gone`` unless the job
reaches them another way.

One hash per chain (``keys.tree``); a record is the children's JSON, rewritten only
when they change. Only steps with a recrawl policy store or read it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import redis

from chains.runtime.units import Unit
from external_interface import keys

MAX_DESCENDANTS = 100_000  # a dropped subtree is walked this far, no further
StepUnit = tuple[str, Unit]  # a unit and the chain step it belongs to


@dataclass(frozen=True)
class Spawned:
    """A unit's children at its last fetch, by step (a next page is under its own step)."""

    children: Mapping[str, list[Unit]]

    def ids(self) -> dict[str, str]:
        """Child unit id -> its step."""
        return {u["id"]: step for step, units in self.children.items() for u in units}

    def units(self) -> dict[str, StepUnit]:
        """Child unit id -> its step and the unit (its params)."""
        return {u["id"]: (step, u) for step, units in self.children.items() for u in units}

    def has_next(self, step: str, page: int) -> bool:
        """Whether the unit (``page`` of ``step``'s list) led to a next page."""
        return any(u.get("page", 0) == page + 1 for u in self.children.get(step, []))

    def dumps(self) -> str:
        return json.dumps(self.children, separators=(",", ":"), sort_keys=True)

    @classmethod
    def loads(cls, raw: bytes | str) -> Spawned:
        return cls(json.loads(raw))


class Tree:
    """The stored children of one chain's units."""

    def __init__(self, client: redis.Redis, chain: str) -> None:
        self.redis = client
        self.key = keys.tree(chain)

    def load(self, unit_ids: list[str]) -> list[Spawned | None]:
        """The stored record of each unit, None for a unit never stored; one round trip."""
        if not unit_ids:
            return []
        return [None if raw is None else Spawned.loads(raw)
                for raw in self.redis.hmget(self.key, unit_ids)]

    def save(self, records: Mapping[str, Spawned]) -> None:
        """Store (replace) the records of these units; one round trip."""
        if records:
            self.redis.hset(self.key, mapping={u: s.dumps() for u, s in records.items()})

    def descendants(self, roots: Mapping[str, StepUnit]) -> dict[str, StepUnit]:
        """``roots`` (unit id -> its step and unit) and every unit stored under them,
        breadth first, at most ``MAX_DESCENDANTS``; a round trip per level."""
        found = dict(roots)
        level: Iterable[str] = list(roots)
        while level and len(found) < MAX_DESCENDANTS:
            nxt: dict[str, StepUnit] = {}
            for record in self.load(list(level)):
                if record is not None:
                    nxt.update((u, s) for u, s in record.units().items() if u not in found)
            found.update(nxt)
            level = list(nxt)
        return found
