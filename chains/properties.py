"""Chains of the properties benchmark site: index -> next index, index -> detail.

``properties`` crawls the whole site from one index page: each index page
continues to the next (``next_page``) and fans its 30 detail links out to
``detail`` in messages of ``detail_batch`` units. ``properties_index`` follows
the index pages only (the latency-bound test). Index pages go first (higher
priority) so the frontier never waits behind a queue of details. ``max_depth``
is raised: the ``next`` links make a list 1,667 pages deep on the full site.

Sharded starts (the book's 20 start URLs): a chain has one root, so the bench
launches one job per shard, ``launch(properties_index, params)`` for each of
``shard_params(1667, 20)``, and sums the jobs. Each shard stops where the next
one starts (the index step's ``stop``), as Scrapy's dupefilter stops the book's
``distr`` spider: 1,667 pages in all, none twice.
"""

from __future__ import annotations

from chains.api import Chain, Link, Step
from sites.properties.web import detail, index

MAX_DEPTH = 1_000_000  # one index page per level: the list's length is the depth
INLINE_NEXT = 10_000  # a list runs on in one message (a quarter of the soft time limit caps it)


def properties_chain(detail_batch: int = 50, name: str = "properties") -> Chain:
    """The full crawl; ``detail_batch`` units per detail message."""
    return Chain(name, start=index, max_depth=MAX_DEPTH,
                 steps=[Step(index, priority=7, inline_next=INLINE_NEXT),
                        Step(detail, batch_size=detail_batch)],
                 links=[Link(index, detail)])


def index_chain(name: str = "properties_index") -> Chain:
    """Index pages only, following ``next``: the latency-bound test."""
    return Chain(name, start=index, max_depth=MAX_DEPTH,
                 steps=[Step(index, priority=7, inline_next=INLINE_NEXT)])


def shard_starts(index_pages: int, shards: int) -> list[int]:
    """Evenly spaced start pages, as the book's ``distr`` spider: 1667*x//20, x=0..19."""
    return [index_pages * x // shards for x in range(shards)]


def shard_params(index_pages: int, shards: int) -> list[dict[str, int]]:
    """Launch params of each shard of ``properties_index``: its start page and its end."""
    starts = shard_starts(index_pages, shards)
    ends = [*starts[1:], index_pages]
    return [{"page": s, "stop": e} for s, e in zip(starts, ends, strict=True) if s < e]


properties = properties_chain()
properties_index = index_chain()
