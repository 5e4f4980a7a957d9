"""What an HTTP status means to a crawl: the error it raises and what the runtime does.

``STATUSES`` is the one table (the README's fetch section shows it, rendered by
``status_table``). It follows RFC 9110 and what crawlers agree on: a status
that a later try can change is transient (408, 425, 429, 5xx), one that a fresh
resource can change rotates (401 the session, 403 and 407 the proxy), and one
that nothing can change is permanent (404, 410, 501, 505, other 4xx). A status
below 400 is no error.

``Retry-After`` is honoured on 429 and 503 (RFC 9110 section 10.2.3, RFC 6585),
as delta-seconds (a fraction is read too) or an HTTP date; the advice lands on
the transient error as ``retry_after``. A value that is no number or date,
negative, or a date already past is no advice (None: the backoff decides); one
past a day is read as a day.
The fetch does not cap it further, because the same advice feeds waits of
different costs, each capped where it is spent: a unit's retry delay by
``TASK_BACKOFF_MAX_S``, a site's cooldown by ``POLITE_MAX_PENALTY_S``.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime
from http import HTTPStatus

from exceptions import (
    Banned,
    ClientError,
    CrawlError,
    Gone,
    NotFound,
    NotSupported,
    PermanentError,
    ProxyRefused,
    RateLimited,
    RotateError,
    ServerError,
    SessionExpired,
    TransientError,
    TryAgain,
)

MAX_RETRY_AFTER_S = 86_400.0
_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # RFC 9110 says whole seconds; a fraction is kept


@dataclass(frozen=True)
class StatusRule:
    """The error a status raises, what the runtime does about it, and whether the
    server's ``Retry-After`` counts."""

    error: type[CrawlError]
    action: str
    retry_after: bool = False


_BACKOFF = "retry with backoff"
_GIVE_UP = "give up, record why; never retried"
STATUSES: dict[int, StatusRule] = {
    401: StatusRule(SessionExpired, "rotate the session (cookie), retry"),
    403: StatusRule(Banned, "rotate the proxy (a site's ban rule may name another), retry"),
    404: StatusRule(NotFound, _GIVE_UP),
    407: StatusRule(ProxyRefused, "rotate the proxy, retry"),
    408: StatusRule(TryAgain, _BACKOFF),
    410: StatusRule(Gone, _GIVE_UP),
    425: StatusRule(TryAgain, _BACKOFF),
    429: StatusRule(RateLimited, "retry after Retry-After, else backoff; the site cools down",
                    retry_after=True),
    500: StatusRule(ServerError, _BACKOFF),
    501: StatusRule(NotSupported, _GIVE_UP),
    502: StatusRule(ServerError, _BACKOFF),
    503: StatusRule(ServerError, "retry after Retry-After, else backoff", retry_after=True),
    504: StatusRule(ServerError, _BACKOFF),
    505: StatusRule(NotSupported, _GIVE_UP),
}
OTHER_4XX = StatusRule(ClientError, _GIVE_UP)
OTHER_5XX = StatusRule(ServerError, _BACKOFF)


def rule_for(status: int) -> StatusRule | None:
    """The rule for ``status``; None below 400 (no error)."""
    if status < 400:
        return None
    return STATUSES.get(status) or (OTHER_4XX if status < 500 else OTHER_5XX)


def status_error(status: int, url: str | None = None,
                 retry_after: str | None = None) -> CrawlError | None:
    """The error for a response's ``status`` (None if it is no error); ``retry_after``
    is its ``Retry-After`` header, read where the table says it counts. ``url`` must
    already be redacted: it goes into the error as it is."""
    rule = rule_for(status)
    if rule is None:
        return None
    message, kind = f"{status} {_phrase(status)}", rule.error
    if issubclass(kind, TransientError):
        advice = parse_retry_after(retry_after) if rule.retry_after else None
        if advice is not None:
            message += f" (Retry-After {advice:g} s)"
        return kind(message, url=url, status=status, retry_after=advice)
    return kind(message, url=url, status=status)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` header asks to wait (delta-seconds or HTTP date,
    at most a day); None when absent, malformed, negative or already past."""
    value = (value or "").strip()
    if _SECONDS.fullmatch(value):
        return min(float(value), MAX_RETRY_AFTER_S)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:  # "-0000": UTC, said without an offset
        when = when.replace(tzinfo=UTC)
    wait = when.timestamp() - (time.time() if now is None else now)
    return min(wait, MAX_RETRY_AFTER_S) if wait > 0 else None


def branch(error: type[CrawlError]) -> str:
    """transient, rotate or permanent: the branch of the error tree ``error`` is on."""
    for base, name in ((TransientError, "transient"), (RotateError, "rotate"),
                       (PermanentError, "permanent")):
        if issubclass(error, base):
            return name
    return "error"


def status_table() -> str:
    """``STATUSES`` as the Markdown table the README shows."""
    rows = [(str(code), rule) for code, rule in sorted(STATUSES.items())]
    rows += [("other 4xx", OTHER_4XX), ("other 5xx", OTHER_5XX)]
    lines = ["| status | error | branch | what happens |", "|---|---|---|---|"]
    lines += [f"| {code} | `{rule.error.__name__}` | {branch(rule.error)} | {rule.action} |"
              for code, rule in rows]
    return "\n".join(lines)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "client error" if status < 500 else "server error"
