"""Times as pages write them, made absolute: "3 hours ago", "yesterday at 14:05", "3小时前".

``relative_time(text, now)`` reads a page's time against ``now``, which should be the
site's own clock (``Response.date``, the server's ``Date`` header), not the crawler's:
a page rendered at the server's 12:00 says "2 hours ago" of 10:00 whatever time the
crawler's machine shows. Wall-clock forms ("yesterday at 14:05", "2026-11-03 08:15")
are read in ``now``'s timezone unless ``tz`` says the site's (a Chinese site writes
Beijing time under a GMT ``Date``). Every form comes back in that one timezone
(``tz``, else ``now``'s): "3 minutes ago" and "yesterday 14:05" on one page compare and
store alike. English and Chinese forms:

    just now | 刚刚                                   now
    N seconds/minutes/hours/days/weeks ago | N秒/分钟/小时/天/周前
    today at HH:MM | 今天 HH:MM
    yesterday at HH:MM | 昨天 HH:MM | 前天 HH:MM (two days before)
    on YYYY-MM-DD at HH:MM | YYYY-MM-DD HH:MM[:SS] | YYYY年M月D日 HH:MM
    MM-DD HH:MM | M月D日 HH:MM                       this year (last year if ahead of now)
    an ISO-8601 time with a timezone                 that moment

Anything else raises ``ValueError`` naming the text: a parser should fail loudly on a
layout it does not know, not store a wrong time.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, tzinfo

UNITS = {"second": 1, "minute": 60, "hour": 3600, "day": 86400, "week": 604800,
         "秒": 1, "分钟": 60, "分": 60, "小时": 3600, "天": 86400, "周": 604800}
AGO = re.compile(r"(\d+)\s*(?:(second|minute|hour|day|week)s?\s+ago|(秒|分钟|分|小时|天|周)前)")
DAY_AT = re.compile(r"(today|yesterday|今天|昨天|前天)(?:\s+at)?\s*(\d{1,2}):(\d{2})")
DAYS_BACK = {"today": 0, "今天": 0, "yesterday": 1, "昨天": 1, "前天": 2}
DATE_AT = re.compile(r"(?:on\s+)?(\d{4})[-/年](\d{1,2})[-/月](\d{1,2})日?(?:\s+at)?"
                     r"(?:\s*(\d{1,2}):(\d{2})(?::(\d{2}))?)?")
MONTH_DAY = re.compile(r"(\d{1,2})[-/月](\d{1,2})日?\s+(\d{1,2}):(\d{2})")


def relative_time(text: str, now: datetime | None, tz: tzinfo | None = None) -> datetime:
    """The moment ``text`` names, read against ``now`` (aware; None: this machine's clock,
    when the server sent no ``Date``); see the module docstring."""
    if now is None:
        now = datetime.now(UTC)
    if now.tzinfo is None:
        raise ValueError("relative_time needs an aware 'now' (Response.date is one)")
    said = " ".join(text.split()).lower()
    local = now.astimezone(tz) if tz is not None else now
    if said in ("just now", "刚刚", "now"):
        return local
    if found := AGO.fullmatch(said):
        return local - timedelta(seconds=int(found[1]) * UNITS[found[2] or found[3]])
    if found := DAY_AT.fullmatch(said):
        base = local - timedelta(days=DAYS_BACK[found[1]])
        return base.replace(hour=int(found[2]), minute=int(found[3]), second=0, microsecond=0)
    if found := DATE_AT.fullmatch(said):
        year, month, day, hour, minute, second = (int(g or 0) for g in found.groups())
        return local.replace(year=year, month=month, day=day, hour=hour, minute=minute,
                             second=second, microsecond=0)
    if found := MONTH_DAY.fullmatch(said):
        month, day, hour, minute = (int(g) for g in found.groups())
        moment = local.replace(month=month, day=day, hour=hour, minute=minute, second=0,
                               microsecond=0)
        return moment if moment <= local else moment.replace(year=moment.year - 1)
    try:
        absolute = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        absolute = None
    if absolute is not None and absolute.tzinfo is not None:
        return absolute.astimezone(local.tzinfo)
    raise ValueError(f"unknown time {text!r}: not a form utils.dates.relative_time reads")
