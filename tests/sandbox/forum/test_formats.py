from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from sandbox.forum.formats import ago, http_date, iso, score_text
from tests.sandbox.forum.reading import read_ago, read_score

NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("age", "written"), [
    (timedelta(0), "just now"),
    (timedelta(minutes=1), "1 minute ago"),
    (timedelta(minutes=5), "5 minutes ago"),
    (timedelta(hours=2), "2 hours ago"),
    (timedelta(hours=2, minutes=7), "today at 09:53"),
    (timedelta(hours=21, minutes=55), "yesterday at 14:05"),
    (timedelta(days=1), "yesterday at 12:00"),
    (timedelta(days=3), "3 days ago"),
    (timedelta(days=3, minutes=1), "on 2026-11-17 at 11:59"),
])
def test_each_time_is_written_in_the_first_form_that_fits(age: timedelta, written: str) -> None:
    assert ago(NOW - age, NOW) == written


def test_every_whole_minute_of_three_weeks_reads_back_exactly_against_the_clock() -> None:
    for minutes in range(0, 21 * 24 * 60, 7):
        moment = NOW - timedelta(minutes=minutes)
        assert read_ago(ago(moment, NOW), NOW) == moment, minutes


def test_a_time_the_page_cannot_write_without_loss_is_refused() -> None:
    with pytest.raises(ValueError, match="whole minute"):
        ago(NOW - timedelta(seconds=30), NOW)
    with pytest.raises(ValueError, match="whole minute at or before"):
        ago(NOW + timedelta(minutes=1), NOW)


@pytest.mark.parametrize(("score", "written"), [
    (87, "87"), (-3, "-3"), (0, "0"), (999, "999"), (1000, "1k"), (1200, "1.2k"),
    (12000, "12k"), (12300, "12.3k")])
def test_scores_are_written_in_thousands_from_1000_and_read_back(score: int,
                                                                 written: str) -> None:
    assert score_text(score) == written
    assert read_score(written) == score


def test_a_score_that_would_lose_digits_is_refused() -> None:
    with pytest.raises(ValueError, match="multiple of 100"):
        score_text(1250)


def test_records_and_the_date_header_write_the_clock_in_utc() -> None:
    assert iso(NOW) == "2026-11-20T12:00:00Z"
    assert http_date(NOW) == "Fri, 20 Nov 2026 12:00:00 GMT"
