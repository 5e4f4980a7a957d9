"""The polite site's content, a function of a seed, and the crawl it implies.

    /                                 the index: one link per category
    /category/<slug>?page=N           a listing: ``per_page`` item links, a next link
    /item/<id>                        an item's detail: title, price, sku, category

``Catalogue.chain_paths()`` lists every URL a crawl of the chain fetches once
(index, every listing page, every item): with the default shape 1,581 of them.
``expected_records()`` is what the crawl must store, one record per item, computed
from the seed alone, never from a crawler.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cached_property
from math import ceil
from typing import Any

NOUNS = ("lamp", "kettle", "chair", "teapot", "notebook", "backpack", "clock", "mug", "blanket",
         "speaker", "jacket", "helmet", "umbrella", "wallet", "candle", "skillet")
ADJECTIVES = ("walnut", "brass", "linen", "enamel", "felt", "copper", "oak", "wool", "steel",
              "cedar", "canvas", "glass", "ceramic", "leather")
CATEGORIES = ("kitchen", "garden", "office", "outdoor", "lighting", "textiles", "audio", "travel",
              "workshop", "nursery", "bath", "storage", "pets", "music", "sport", "games")


@dataclass(frozen=True)
class Shape:
    """Sizes: the defaults make 1,581 requests (1 index + 80 listing pages + 1,500 items)."""

    categories: int = 10
    items_per_category: int = 150
    spread: int = 0  # each category holds items_per_category +- spread (0: all the same)
    per_page: int = 20

    def __post_init__(self) -> None:
        if not 1 <= self.categories <= len(CATEGORIES):
            raise ValueError(f"categories must be 1..{len(CATEGORIES)}, not {self.categories}")
        if self.per_page < 1 or self.items_per_category - self.spread < 1:
            raise ValueError("per_page and items_per_category - spread must be at least 1")


@dataclass(frozen=True)
class Item:
    id: int
    category: str
    title: str
    price_cents: int
    sku: str

    @property
    def path(self) -> str:
        return f"/item/{self.id}"

    def record(self) -> dict[str, Any]:
        """What a crawl stores for this item."""
        return {"id": self.id, "category": self.category, "title": self.title,
                "price": self.price_cents / 100, "sku": self.sku}


@dataclass(frozen=True)
class Category:
    slug: str
    name: str
    items: tuple[Item, ...]
    per_page: int

    @property
    def pages(self) -> int:
        return ceil(len(self.items) / self.per_page)

    def page(self, n: int) -> tuple[Item, ...]:
        """Items on listing page ``n`` (1-based); empty past the last page."""
        return self.items[(n - 1) * self.per_page: n * self.per_page] if n >= 1 else ()

    def page_path(self, n: int) -> str:
        return f"/category/{self.slug}?page={n}"


class Catalogue:
    """Every category and item, drawn from ``seed``: the same shop on every run."""

    def __init__(self, seed: int = 1, shape: Shape | None = None) -> None:
        self.seed = seed
        self.shape = shape or Shape()

    @cached_property
    def categories(self) -> tuple[Category, ...]:
        r = random.Random(self.seed)
        shape, next_id, found = self.shape, 1, []
        for slug in CATEGORIES[: shape.categories]:
            count = shape.items_per_category + r.randint(-shape.spread, shape.spread)
            items = []
            for _ in range(count):
                items.append(Item(next_id, slug, f"{r.choice(ADJECTIVES).title()} "
                                  f"{r.choice(NOUNS)} no. {next_id}", r.randrange(199, 49999),
                                  f"{slug[:3].upper()}-{r.randrange(16**6):06X}"))
                next_id += 1
            found.append(Category(slug, slug.title(), tuple(items), shape.per_page))
        return tuple(found)

    @cached_property
    def items(self) -> dict[int, Item]:
        return {item.id: item for c in self.categories for item in c.items}

    @cached_property
    def by_slug(self) -> dict[str, Category]:
        return {c.slug: c for c in self.categories}

    def chain_paths(self) -> list[str]:
        """Every URL of the chain, each once, in the order a breadth-first crawl meets them."""
        listings = [c.page_path(n) for c in self.categories for n in range(1, c.pages + 1)]
        return ["/", *listings, *(f"/item/{i}" for i in self.items)]

    def expected_records(self) -> list[dict[str, Any]]:
        """The records a complete crawl stores, sorted by item id."""
        return [item.record() for item in self.items.values()]


def expected_records(seed: int = 1, shape: Shape | None = None) -> list[dict[str, Any]]:
    """The item records a complete crawl of the site built from ``seed`` must store."""
    return Catalogue(seed, shape).expected_records()


def chain_requests(seed: int = 1, shape: Shape | None = None) -> int:
    """How many distinct URLs the chain fetches (1,581 with the default shape)."""
    return len(Catalogue(seed, shape).chain_paths())
