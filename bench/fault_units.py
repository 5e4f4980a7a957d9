"""Which unit of the demo chain stores an item: a lost item is named with the unit that owed it.

Derived from the sandbox's data alone, as ``expected_keys`` is: a list's page holds a fixed
slice of the list, and the sandbox's cursors encode offsets, so the page (and so the unit's
params and id, as the engine derives them) of every item is known in advance.
"""

from __future__ import annotations

from typing import Any

from chains.runtime.units import unit_id
from sandbox.server import encode_cursor
from sandbox.world import World


def owing_unit(world: World, collection: str, key: str) -> tuple[str, dict[str, Any]] | None:
    """The step and params of the unit that stores ``collection/key``; None if unknown."""
    shape = world.shape
    if collection == "users":
        return "user_info", {"user_id": key}
    if collection == "articles":
        return "detail", {"article_id": key}
    if collection == "feed_entries":
        order = list(world.articles)
        if key not in order:
            return None
        return "feed", {"page": order.index(key) // shape.feed_page_size + 1}
    if collection == "statuses":
        return _list_unit(world, "user_statuses", "user_id", key, shape.statuses_page_size)
    if collection == "comments":
        return _list_unit(world, "comment", "article_id", key, shape.comments_page_size)
    return None


def _list_unit(world: World, step: str, owner_field: str, key: str,
               size: int) -> tuple[str, dict[str, Any]] | None:
    """The page of a cursor-paged list holding ``key``: the first page has no cursor."""
    for owner, entries in _lists(world, step).items():
        if key in entries:
            offset = entries.index(key) // size * size
            params: dict[str, Any] = {owner_field: owner}
            if offset:
                params["cursor"] = encode_cursor(offset)
            return step, params
    return None


def _lists(world: World, step: str) -> dict[str, list[str]]:
    if step == "user_statuses":
        return {uid: [s.id for s in statuses] for uid, statuses in world.statuses.items()}
    return {aid: [c["id"] for c in world.comments(aid)] for aid in world.articles}


def describe(world: World, item: str) -> str:
    """``collection/key`` with the unit owing it: ``users/u3 <- user_info {...} 9f2c...``."""
    collection, _, key = item.partition("/")
    owed = owing_unit(world, collection, key)
    if owed is None:
        return f"{item} <- unit unknown"
    step, params = owed
    return f"{item} <- {step} {params} unit {unit_id(step, params)}"
