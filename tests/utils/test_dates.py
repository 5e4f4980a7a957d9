"""Relative times read against the site's clock, English and Chinese; unknown forms fail."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from utils.dates import relative_time

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
BEIJING = timezone(timedelta(hours=8))


@pytest.mark.parametrize(("text", "moment"), [
    ("just now", NOW),
    ("刚刚", NOW),
    ("1 minute ago", datetime(2026, 11, 20, 11, 59, tzinfo=UTC)),
    ("5 minutes ago", datetime(2026, 11, 20, 11, 55, tzinfo=UTC)),
    ("2 hours ago", datetime(2026, 11, 20, 10, 0, tzinfo=UTC)),
    ("3 days ago", datetime(2026, 11, 17, 12, 0, tzinfo=UTC)),
    ("2 weeks ago", datetime(2026, 11, 6, 12, 0, tzinfo=UTC)),
    ("today at 09:15", datetime(2026, 11, 20, 9, 15, tzinfo=UTC)),
    ("yesterday at 14:05", datetime(2026, 11, 19, 14, 5, tzinfo=UTC)),
    ("on 2026-10-01 at 08:30", datetime(2026, 10, 1, 8, 30, tzinfo=UTC)),
    ("3小时前", datetime(2026, 11, 20, 9, 0, tzinfo=UTC)),
    ("10分钟前", datetime(2026, 11, 20, 11, 50, tzinfo=UTC)),
    ("昨天 14:05", datetime(2026, 11, 19, 14, 5, tzinfo=UTC)),
    ("前天 08:00", datetime(2026, 11, 18, 8, 0, tzinfo=UTC)),
    ("2026年3月4日 10:00", datetime(2026, 3, 4, 10, 0, tzinfo=UTC)),
    ("11-19 10:00", datetime(2026, 11, 19, 10, 0, tzinfo=UTC)),
    ("12-31 23:00", datetime(2025, 12, 31, 23, 0, tzinfo=UTC)),  # ahead of now: last year
    ("2026-11-01T10:00:00+02:00", datetime(2026, 11, 1, 8, 0, tzinfo=UTC)),
])
def test_page_times_become_moments_against_the_sites_clock(text: str,
                                                           moment: datetime) -> None:
    assert relative_time(text, NOW) == moment


def test_wall_clock_forms_are_read_in_the_sites_timezone() -> None:
    got = relative_time("昨天 14:05", NOW, tz=BEIJING)  # 20:00 in Beijing: yesterday is 19th
    assert got == datetime(2026, 11, 19, 14, 5, tzinfo=BEIJING)


def test_an_unknown_form_fails_naming_the_text() -> None:
    with pytest.raises(ValueError, match="'a while back'"):
        relative_time("a while back", NOW)


def test_a_naive_clock_is_refused() -> None:
    with pytest.raises(ValueError, match="aware"):
        relative_time("just now", datetime(2026, 11, 20, 12, 0))


@pytest.mark.parametrize("text", ["just now", "5 minutes ago", "3小时前", "yesterday at 14:05",
                                  "on 2026-10-01 at 08:30", "11-19 10:00",
                                  "2026-11-01T10:00:00+02:00"])
def test_every_form_comes_back_in_the_one_timezone_asked_for(text: str) -> None:
    """One page's times, mixed forms, all in the site's timezone: none in UTC beside them."""
    assert relative_time(text, NOW, tz=BEIJING).utcoffset() == timedelta(hours=8)
    assert relative_time(text, NOW).utcoffset() == timedelta(0)
