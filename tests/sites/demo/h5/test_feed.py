from __future__ import annotations

import pytest

from exceptions import ParseError
from sites.demo.h5.feed import FeedEntry, FeedInput, build_request, parse
from tests.sites.demo.saved import broken, saved


def test_feed_page_yields_its_entries_with_authors_and_the_next_page() -> None:
    parsed = parse(FeedInput(page=1), saved("feed_page_1.json"))
    assert len(parsed.items) == 10
    first = parsed.items[0]
    assert isinstance(first, FeedEntry)
    assert (first.id, first.author_id) == ("a00000", first.author_id)
    assert first.author_id.startswith("u") and first.title
    assert parsed.next_params() == {"page": 2}


def test_last_feed_page_has_no_next_page() -> None:
    assert parse(FeedInput(page=8), saved("feed_last_page.json")).next_page is None


def test_feed_request_asks_for_the_page() -> None:
    request = build_request(FeedInput(page=3))
    assert request.url.endswith("/h5/feed") and request.params == {"page": "3"}


def test_a_page_that_is_not_a_feed_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse(FeedInput(page=1), broken(b'{"error": "maintenance"}'))
