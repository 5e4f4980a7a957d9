"""What an HTTP status means to a crawl: the error it raises and what the runtime does.

``STATUSES`` is the one table (the README's fetch section shows it, rendered by
``status_table``). It follows RFC 9110 and what crawlers agree on: a status
that a later try can change is transient (408, 425, 429, 5xx), one that a fresh
resource can change rotates (401 the session, 403 and 407 the proxy), and one
that nothing can change is permanent (404, 410, 501, 505, other 4xx). A status
below 400 is no error.

A 401 is decided per site: only a site with a session (cookie) pool has another
session to try. On a site without one (``sessions=False``: no step of it takes a
cookie from a pool, or its providers are off) a 401 is ``NO_SESSION_401``, a
permanent ``ClientError`` whose message says so, never retried as if a session
would fix it.

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
from typing import TYPE_CHECKING

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
from utils.urls import redact_url

if TYPE_CHECKING:
    from external_interface.http import Response

MAX_RETRY_AFTER_S = 86_400.0
_SECONDS = re.compile(r"[0-9]+(?:\.[0-9]+)?")  # RFC 9110 says whole seconds; a fraction is kept


@dataclass(frozen=True)
class StatusRule:
    """The error a status raises, what the runtime does about it, and whether the
    server's ``Retry-After`` counts."""

    error: type[CrawlError]
    action: str
    retry_after: bool = False
    reason: str = ""  # said after the status in the error's message


_BACKOFF = "retry with backoff"
_GIVE_UP = "give up, record why; never retried"
STATUSES: dict[int, StatusRule] = {
    401: StatusRule(SessionExpired, "on a site with a session pool: rotate the session "
                                     "(cookie), retry"),
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
NO_SESSION_401 = StatusRule(ClientError, "give up, record why: no other session to try",
                            reason="the site has no session pool to rotate")


def rule_for(status: int, sessions: bool = True) -> StatusRule | None:
    """The rule for ``status``; None below 400 (no error). ``sessions``: whether the
    site has a session pool (a 401 rotates only then)."""
    if status < 400:
        return None
    if status == 401 and not sessions:
        return NO_SESSION_401
    return STATUSES.get(status) or (OTHER_4XX if status < 500 else OTHER_5XX)


def status_error(status: int, url: str | None = None, retry_after: str | None = None,
                 sessions: bool = True) -> CrawlError | None:
    """The error for a response's ``status`` (None if it is no error); ``retry_after``
    is its ``Retry-After`` header, read where the table says it counts; ``sessions``
    as for ``rule_for``. ``url`` must already be redacted: it goes into the error as
    it is."""
    rule = rule_for(status, sessions)
    if rule is None:
        return None
    message, kind = f"{status} {_phrase(status)}", rule.error
    if rule.reason:
        message += f": {rule.reason}"
    if issubclass(kind, TransientError):
        advice = parse_retry_after(retry_after) if rule.retry_after else None
        if advice is not None:
            message += f" (Retry-After {advice:g} s)"
        return kind(message, url=url, status=status, retry_after=advice)
    return kind(message, url=url, status=status)


def raise_for_status(response: Response, sessions: bool = True) -> None:
    """Raise the error ``STATUSES`` names for the response's status, if any;
    ``sessions``: whether the site has a session pool (``rule_for``)."""
    if rule_for(response.status) is None:  # most pages: nothing to redact, no header read
        return
    error = status_error(response.status, redact_url(response.url),
                         response.headers.get("Retry-After"), sessions)
    if error is not None:
        raise error


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
    rows.insert([code for code, _ in rows].index("401") + 1,
                ("401, site without a session pool", NO_SESSION_401))
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
