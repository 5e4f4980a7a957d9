"""The polite site's content is a function of its seed, and its chain is long enough."""

from __future__ import annotations

import pytest

from sandbox.polite.catalogue import Catalogue, Shape, chain_requests, expected_records


def test_the_default_chain_makes_at_least_1500_requests() -> None:
    assert chain_requests() == 1 + 10 * 8 + 1500  # index, listing pages, items


def test_the_same_seed_builds_the_same_shop_and_another_seed_another() -> None:
    assert expected_records(3) == expected_records(3)
    assert expected_records(3) != expected_records(4)


def test_every_item_is_on_exactly_one_listing_page() -> None:
    catalogue = Catalogue(5, Shape(categories=3, items_per_category=25, spread=4, per_page=10))
    listed = [item.id for c in catalogue.categories for n in range(1, c.pages + 1)
              for item in c.page(n)]
    assert sorted(listed) == sorted(catalogue.items)
    assert [r["id"] for r in catalogue.expected_records()] == sorted(catalogue.items)


def test_a_shape_that_cannot_be_built_is_refused_with_its_reason() -> None:
    with pytest.raises(ValueError, match=r"categories must be 1\.\.16"):
        Shape(categories=40)
