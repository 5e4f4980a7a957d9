"""``render="auto"``'s page patterns and decisions: one per pattern, the first kept."""

from __future__ import annotations

import pytest

from chains.api import step
from chains.runtime.render import PLAIN, RENDER, RenderChoices, pattern


def test_pages_of_one_kind_share_a_pattern() -> None:
    assert pattern("http://h/product/1000") == pattern("http://h/product/2")
    assert pattern("http://h/a/1?page=2&q=x") == pattern("http://h/a/9?q=y&page=3")
    assert pattern("http://h/product/1") != pattern("http://h/scroll")
    assert pattern("http://h/p/0123456789abcdef") == pattern("http://h/p/fedcba9876543210")


def test_a_pattern_is_decided_once() -> None:
    choices = RenderChoices()
    assert choices.get("s", "http://h/p/1") is None
    choices.decide("s", "http://h/p/1", RENDER)
    choices.decide("s", "http://h/p/2", PLAIN)
    assert choices.get("s", "http://h/p/3") == RENDER
    assert choices.get("other", "http://h/p/3") is None


def test_a_step_names_a_render_mode_it_knows() -> None:
    with pytest.raises(ValueError, match="render='always'"):
        step("s.web.x", url="{url}", render="always")
