"""How the forum writes times and scores: as people read them, yet without loss.

A post's time is written relative to the site's clock (the response's ``Date``), in the
first form that fits its age:

    "just now"                 age 0
    "N minutes ago"            under an hour
    "N hours ago"              under a day, a whole number of hours
    "today at HH:MM"           the same UTC date as the clock
    "yesterday at HH:MM"       the UTC date before the clock's
    "N days ago"               a whole number of days
    "on YYYY-MM-DD at HH:MM"   anything else

Every time the world holds is a whole minute, so each form gives the exact moment back
from the clock. A score under 1000 is written as is ("87", "-3"); from 1000 up it is a
multiple of 100 written in thousands ("1.2k" is 1200, "12k" is 12000).
"""

from __future__ import annotations

from datetime import datetime
from email.utils import format_datetime

MINUTE, HOUR, DAY = 60, 3600, 86400


def ago(moment: datetime, now: datetime) -> str:
    """``moment`` as the page writes it when the site's clock reads ``now``."""
    age = int((now - moment).total_seconds())
    if age < 0 or age % MINUTE:
        raise ValueError(f"{moment.isoformat()} is not a whole minute at or before "
                         f"{now.isoformat()}: the forum cannot write it without loss")
    days_before = (now.date() - moment.date()).days
    clock = f"{moment:%H:%M}"
    if age == 0:
        return "just now"
    if age < HOUR:
        return _plural(age // MINUTE, "minute")
    if age < DAY and age % HOUR == 0:
        return _plural(age // HOUR, "hour")
    if days_before == 0:
        return f"today at {clock}"
    if days_before == 1:
        return f"yesterday at {clock}"
    if age % DAY == 0:
        return _plural(age // DAY, "day")
    return f"on {moment:%Y-%m-%d} at {clock}"


def _plural(n: int, unit: str) -> str:
    return f"{n} {unit} ago" if n == 1 else f"{n} {unit}s ago"


def score_text(score: int) -> str:
    """``score`` as the page writes it: "87", "-3", "1k", "1.2k", "12.3k"."""
    if score <= -1000:
        raise ValueError(f"score {score}: the forum writes scores from -999 up")
    if score < 1000:
        return str(score)
    if score % 100:
        raise ValueError(f"score {score}: from 1000 up a score must be a multiple of 100, "
                         f"or \"1.2k\" would lose digits")
    thousands, hundreds = divmod(score // 100, 10)
    return f"{thousands}.{hundreds}k" if hundreds else f"{thousands}k"


def iso(moment: datetime) -> str:
    """A UTC moment as records hold it: ``2026-11-17T12:00:00Z``."""
    return f"{moment:%Y-%m-%dT%H:%M:%SZ}"


def http_date(now: datetime) -> str:
    """The ``Date`` header for the site's clock: ``Fri, 20 Nov 2026 12:00:00 GMT``."""
    return format_datetime(now, usegmt=True)
