"""The JavaScript shop's products, deterministic from a seed, and what a crawl must find.

Products are dealt to three sections, one per way a page builds its list by script:

    app      a single-page list whose rows come from a JSON API the script calls
    scroll   an infinite-scroll list, ``SCROLL_BATCH`` rows per call as the page scrolls
    reveal   a list that appears only once its button is clicked

Every product's own page is complete in its HTML: no script needed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

SECTIONS = ("app", "scroll", "reveal")
SCROLL_BATCH = 10
_WORDS = ("amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "harbor", "iris",
          "jade", "kelp", "lumen", "moss", "nova", "onyx", "pine", "quartz", "reef")
_KINDS = ("lamp", "chair", "kettle", "scarf", "mug", "clock", "bag", "rug", "vase")


@dataclass(frozen=True)
class Product:
    id: int
    name: str
    price: float
    section: str

    def record(self) -> dict[str, object]:
        return {"id": self.id, "name": self.name, "price": self.price,
                "section": self.section}


class Catalogue:
    """``products`` products from ``seed``, dealt round-robin to the sections."""

    def __init__(self, seed: int = 1, products: int = 90) -> None:
        rng = random.Random(seed)
        self.seed = seed
        self.products = [
            Product(1000 + i, f"{rng.choice(_WORDS)} {rng.choice(_KINDS)} {i}",
                    round(rng.uniform(2, 500), 2), SECTIONS[i % len(SECTIONS)])
            for i in range(products)]
        self.by_id = {p.id: p for p in self.products}

    def section(self, name: str) -> list[Product]:
        return [p for p in self.products if p.section == name]

    def expected(self) -> dict[str, object]:
        """What ``/__expected`` answers: every product record, and the pages there are."""
        return {"products": [p.record() for p in self.products],
                "pages": 1 + len(SECTIONS) + len(self.products)}
