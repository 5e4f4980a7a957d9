"""Every status class through the real fetch path: the error, its branch, the advised wait.

A loopback server answers ``/status?code=C&ra=R`` with status C and, when R is
given, ``Retry-After: R``; the fetch classifies it by ``statuses.STATUSES``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from email.utils import formatdate
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest

from config import FetchSettings
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
from external_interface.http import Request
from external_interface.statuses import (
    STATUSES,
    parse_retry_after,
    rule_for,
    status_error,
    status_table,
)
from tests.external_interface.clients.raw_server import AnyClient, RawServer, client, response

NOW = 1_700_000_000.0


def _status(conn: socket.socket, head: bytes) -> bool:
    query = parse_qs(urlsplit(head.split(b" ")[1].decode()).query)
    headers = {"Content_Length": "0", "Connection": "close"}  # no reuse racing the close
    if "ra" in query:
        headers["Retry_After"] = query["ra"][0]
    conn.sendall(response(f"{query['code'][0]} Whatever", b"", **headers))
    return False


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    srv = RawServer({"/status": _status})
    yield srv
    srv.close()


@pytest.fixture(scope="module")
def fetcher(client_name: str) -> AnyClient:
    return client(client_name, FetchSettings(deadline_s=2, connect_timeout_s=0.5))


def _fetch_status(fetcher: AnyClient, server: RawServer, code: int,
                  retry_after: str | None = None) -> CrawlError:
    query = {"code": str(code)} | ({"ra": retry_after} if retry_after is not None else {})
    with pytest.raises(CrawlError) as caught:
        fetcher.fetch(Request(f"{server.base}/status?{urlencode(query)}"))
    return caught.value


@pytest.mark.parametrize(("code", "error", "branch"), [
    (401, SessionExpired, RotateError),
    (403, Banned, RotateError),
    (407, ProxyRefused, RotateError),
    (404, NotFound, PermanentError),
    (410, Gone, PermanentError),
    (408, TryAgain, TransientError),
    (425, TryAgain, TransientError),
    (429, RateLimited, TransientError),
    (500, ServerError, TransientError),
    (502, ServerError, TransientError),
    (503, ServerError, TransientError),
    (504, ServerError, TransientError),
    (501, NotSupported, PermanentError),
    (505, NotSupported, PermanentError),
    (400, ClientError, PermanentError),
    (418, ClientError, PermanentError),
    (451, ClientError, PermanentError),
    (520, ServerError, TransientError),
    (599, ServerError, TransientError),
])
def test_each_status_raises_the_error_that_says_what_to_do(
        fetcher: AnyClient, server: RawServer, code: int, error: type[CrawlError],
        branch: type[CrawlError]) -> None:
    raised = _fetch_status(fetcher, server, code)
    assert type(raised) is error and isinstance(raised, branch)
    assert raised.status == code and str(code) in str(raised)
    assert str(raised.url).startswith(server.base)


def test_a_gone_page_is_also_not_found_for_code_that_catches_that() -> None:
    assert issubclass(Gone, NotFound)


def test_a_proxy_refusal_blames_the_proxy(fetcher: AnyClient, server: RawServer) -> None:
    raised = _fetch_status(fetcher, server, 407)
    assert isinstance(raised, ProxyRefused) and raised.resource == "proxy"


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_that_answers_407_is_refused_for_plain_and_tunnelled_requests(
        fetcher: AnyClient, scheme: str) -> None:
    proxy = RawServer()  # answers every proxied request and CONNECT with 407
    try:
        with pytest.raises(ProxyRefused) as caught:
            fetcher.fetch(Request(f"{scheme}://127.0.0.1:9/page", proxy=proxy.base))
        assert caught.value.status == 407 and caught.value.resource == "proxy"
    finally:
        proxy.close()


@pytest.mark.parametrize(("code", "header", "advice"), [
    (429, "7", 7.0),
    (503, "2", 2.0),
    (429, "0", 0.0),
    (503, "999999999", 86_400.0),
    (429, None, None),
    (503, None, None),
    (429, "soon", None),
    (503, "-5", None),
    (429, "1.5", 1.5),
    (503, "Wed, 21 Oct 2015 07:28:00 GMT", None),
    (500, "5", None),
    (502, "5", None),
    (408, "5", None),
])
def test_retry_after_is_honoured_on_429_and_503_only_and_garbage_is_no_advice(
        fetcher: AnyClient, server: RawServer, code: int, header: str | None,
        advice: float | None) -> None:
    raised = _fetch_status(fetcher, server, code, header)
    assert isinstance(raised, TransientError) and raised.retry_after == advice


@pytest.mark.parametrize("code", [429, 503])
def test_a_retry_after_date_is_the_wait_until_then(
        fetcher: AnyClient, server: RawServer, code: int) -> None:
    raised = _fetch_status(fetcher, server, code, formatdate(time.time() + 120, usegmt=True))
    assert isinstance(raised, TransientError) and raised.retry_after is not None
    assert 60 < raised.retry_after <= 120


@pytest.mark.parametrize(("value", "seconds"), [
    ("120", 120.0), (" 3 ", 3.0), ("Tue, 14 Nov 2023 22:16:40 GMT", 200.0),
    ("Tue, 14 Nov 2023 22:16:40 -0000", 200.0), ("Tue, 14 Nov 2023 22:13:20 GMT", None),
    ("Tue, 14 Nov 2023 22:10:00 GMT", None), ("", None), (None, None), ("Tue, 99 Foo", None),
    ("\u0661\u0662", None), ("1e3", None), ("+5", None),
])
def test_retry_after_reads_seconds_and_http_dates(value: str | None,
                                                  seconds: float | None) -> None:
    assert parse_retry_after(value, now=NOW) == seconds


def test_the_readme_table_shows_every_status_and_the_fallbacks() -> None:
    table = status_table()
    for code, rule in STATUSES.items():
        assert f"| {code} | `{rule.error.__name__}` |" in table
    assert "| other 4xx | `ClientError` | permanent |" in table
    assert "| other 5xx | `ServerError` | transient |" in table


def test_a_401_is_permanent_on_a_site_without_a_session_pool() -> None:
    assert rule_for(401) is STATUSES[401] and STATUSES[401].error is SessionExpired
    error = status_error(401, "http://h/x", sessions=False)
    assert type(error) is ClientError and isinstance(error, PermanentError)
    assert error.reason == "ClientError: 401 Unauthorized: the site has no session pool to rotate"
    assert status_error(403, "http://h/x", sessions=False).__class__ is Banned  # 401 only
    assert "| 401, site without a session pool | `ClientError` | permanent |" in status_table()
