"""Abbreviated counts read back in full; what is not a count fails."""

from __future__ import annotations

import pytest

from utils.numbers import short_number


@pytest.mark.parametrize(("text", "count"), [
    ("87", 87), ("-3", -3), ("1k", 1000), ("1.2k", 1200), ("12.3K", 12300), ("3.4M", 3_400_000),
    ("1,234", 1234), ("1.2万", 12000), (" 2k+ ", 2000), ("1.5亿", 150_000_000),
])
def test_abbreviated_counts_are_read_in_full(text: str, count: int) -> None:
    assert short_number(text) == count


def test_text_that_is_not_a_count_fails_naming_it() -> None:
    with pytest.raises(ValueError, match="'many'"):
        short_number("many")
