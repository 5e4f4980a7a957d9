"""Recrawl decisions for a batch of units: skip, fetch, and whether content changed.

The key is the fingerprint of the request the step builds (before providers add
cookies, proxies or signatures, which change on every fetch). Marks are written
only after the items are saved and the children published, so a unit that fails
at any point before is fetched again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass

from external_interface.dedup import DedupStore, RecrawlPolicy, Seen, content_hash
from external_interface.http import Request
from external_interface.storage import Item
from utils.fingerprint import request_fingerprint


def request_key(request: Request) -> bytes:
    """Dedup key of a request: method, the URL fetched (params added as the fetch adds
    them) in its canonical form (``utils.fingerprint``), and body."""
    return request_fingerprint(request.method, request.full_url, request.data or b"")


def items_hash(items: Sequence[Item], leads: object = None) -> int:
    """Content hash of what a page yielded, independent of markup noise and item order:
    its items and what it leads to (``leads``: its follow records and next page, as
    JSON), so a list whose rows or links changed reads as changed."""
    rows = sorted((i.collection, i.item_key(), i.model_dump_json()) for i in items)
    return content_hash(json.dumps([rows, leads], separators=(",", ":"), sort_keys=True,
                                   default=str))


@dataclass
class Recrawl:
    """The dedup side of one unit: decided before the fetch, marked after the save."""

    key: bytes
    seen: Seen | None
    skip: bool
    digest: int | None = None

    def unchanged(self, store: DedupStore, items: Sequence[Item], leads: object = None) -> bool:
        """True when the page was seen before with the same content: not stored again."""
        self.digest = items_hash(items, leads)
        return self.seen is not None and not store.changed(self.key, self.digest)


def plan(store: DedupStore, policy: RecrawlPolicy | None,
         units: Sequence[tuple[Request, bool, bool]]) -> list[Recrawl | None]:
    """One lookup for a batch of ``(request, first start?, first page?)``.

    A unit restarted in its job never skips: it must finish what it began.
    """
    if policy is None or not units:
        return [None] * len(units)
    keys = [request_key(request) for request, _, _ in units]
    now = int(time.time())
    plans: list[Recrawl | None] = []
    for key, seen, (_, first, first_page) in zip(keys, store.seen_many(keys), units,
                                                 strict=True):
        volatile = policy.volatile or (policy.first_page_volatile and first_page)
        skip = first and not volatile and policy.decide(seen, now) == "skip"
        plans.append(Recrawl(key, seen, skip))
    return plans


def mark(store: DedupStore, done: Sequence[Recrawl]) -> None:
    """Mark every finished unit's key with its content hash, in one call."""
    entries = [(r.key, r.digest) for r in done if r.digest is not None]
    if entries:
        store.mark_many(entries)
