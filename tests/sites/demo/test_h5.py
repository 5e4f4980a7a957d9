"""The demo's h5 steps on saved pages: feed, profiles, statuses."""

from __future__ import annotations

import pytest

from exceptions import ParseError
from sites.demo.h5 import FeedPage, StatusPage, UserRef, feed, user_info, user_statuses
from sites.demo.site import DemoSettings
from tests.sites.demo.saved import broken, saved

SETTINGS = DemoSettings(base_url="http://127.0.0.1:8765")


def test_feed_page_yields_its_entries_with_authors_and_the_next_page() -> None:
    parsed = feed(FeedPage(page=1), saved("feed_page_1.json"))
    assert len(parsed.items) == 10
    first = parsed.items[0]
    assert first.id == "a00000" and first.author_id.startswith("u") and first.title
    assert parsed.next_params() == {"page": 2}


def test_last_feed_page_has_no_next_page() -> None:
    assert feed(FeedPage(page=8), saved("feed_last_page.json")).next_page is None


def test_feed_request_asks_for_the_page_on_the_jobs_base_url() -> None:
    request = feed.request(FeedPage(page=3), SETTINGS)
    assert request.url == "http://127.0.0.1:8765/h5/feed" and request.params == {"page": "3"}
    elsewhere = feed.request(FeedPage(page=3), DemoSettings(base_url="http://10.1.2.3:9"))
    assert elsewhere.url == "http://10.1.2.3:9/h5/feed"


def test_a_page_that_is_not_a_feed_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        feed(FeedPage(page=1), broken(b'{"error": "maintenance"}'))


def test_profile_page_yields_one_user() -> None:
    [user] = user_info(UserRef(user_id="u0001"), saved("user_u0001.html")).items
    assert (user.id, user.name) == ("u0001", "user 1")
    assert user.followers >= 0 and user.bio


def test_page_without_a_profile_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="profile"):
        user_info(UserRef(user_id="u0001"), broken())


def test_user_ids_outside_the_site_pattern_are_refused() -> None:
    with pytest.raises(ValueError, match="user_id"):
        UserRef(user_id="../admin")


def test_status_page_yields_statuses_and_the_cursor_of_the_next_page() -> None:
    parsed = user_statuses(StatusPage(user_id="u0000"), saved("statuses_u0000_first.json"))
    assert len(parsed.items) == 5
    assert all(s.user_id == "u0000" for s in parsed.items)
    assert parsed.next_params() == {"user_id": "u0000", "cursor": "bzo1"}


def test_first_page_request_sends_no_cursor_and_later_pages_do() -> None:
    assert user_statuses.request(StatusPage(user_id="u0000"), SETTINGS).params == {}
    later = user_statuses.request(StatusPage(user_id="u0000", cursor="bzo1"), SETTINGS)
    assert later.params == {"cursor": "bzo1"}
