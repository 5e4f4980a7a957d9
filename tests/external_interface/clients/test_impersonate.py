"""What the impersonate client puts on the wire: Chrome's own headers in Chrome's order,
the request's over them but for the browser's identity, and nothing kept between fetches."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from config import FetchSettings
from external_interface.clients.impersonate import ImpersonateClient
from external_interface.http import Request
from tests.external_interface.clients.raw_server import RawServer, fixed, response

OK = response("200 OK", b"ok", Content_Length="2", Content_Type="text/html")


@pytest.fixture
def wire() -> Iterator[RawServer]:
    srv = RawServer({"/page": fixed(OK, keep=True)})
    yield srv
    srv.close()


def names(head: bytes) -> list[str]:
    return [line.split(b":")[0].decode().lower() for line in head.split(b"\r\n")[1:] if line]


def field(head: bytes, name: str) -> str | None:
    for line in head.split(b"\r\n")[1:]:
        key, _, value = line.partition(b":")
        if key.decode().lower() == name:
            return value.strip().decode()
    return None


def test_plain_http_is_http11_with_chromes_headers_in_chromes_order(wire: RawServer) -> None:
    ImpersonateClient(FetchSettings()).fetch(Request(f"{wire.base}/page"))
    [head] = wire.heads
    assert head.startswith(b"GET /page HTTP/1.1\r\n")
    assert field(head, "upgrade") is None and field(head, "http2-settings") is None  # no h2c
    assert names(head)[:6] == ["host", "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform",
                               "upgrade-insecure-requests", "user-agent"]
    assert "Chrome/146." in (field(head, "user-agent") or "")
    assert field(head, "accept-encoding") == "gzip, deflate, br, zstd"


def test_the_requests_headers_go_over_chromes_but_never_its_identity(wire: RawServer) -> None:
    ImpersonateClient(FetchSettings()).fetch(Request(f"{wire.base}/page", headers={
        "User-Agent": "Mozilla/5.0 (X11; Linux x86_64; rv:150.0) Gecko/20100101 Firefox/150.0",
        "Accept-Encoding": "identity", "Accept": "application/json", "Referer": "http://a.b/",
        "X-Empty": ""}))
    [head] = wire.heads
    assert "Chrome/146." in (field(head, "user-agent") or "")
    assert field(head, "accept-encoding") == "gzip, deflate, br, zstd"
    assert field(head, "accept") == "application/json"
    assert names(head).index("accept") < names(head).index("sec-fetch-site")  # Chrome's place
    assert field(head, "referer") == "http://a.b/" and field(head, "x-empty") == ""


def test_cookies_credentials_and_bodies_are_sent_as_the_request_says(wire: RawServer) -> None:
    fetcher = ImpersonateClient(FetchSettings())
    fetcher.fetch(Request(wire.base.replace("//", "//us%40r:p%3Aw@") + "/page?x=1",
                          params={"q": "a b"}, cookies={"sid": "abc", "lang": "en"}))
    fetcher.fetch(Request(f"{wire.base}/page", method="POST", data=b"a=1&b=2"))
    fetcher.fetch(Request(f"{wire.base}/page", method="POST"))
    first, post, empty = wire.heads
    assert first.startswith(b"GET /page?x=1&q=a+b HTTP/1.1\r\n")
    assert field(first, "cookie") == "sid=abc; lang=en"
    assert field(first, "authorization") == "Basic dXNAcjpwOnc="  # us@r:p:w, never in the URL
    assert field(post, "content-length") == "7" and b"Expect" not in post
    assert empty.startswith(b"POST ") and field(empty, "content-length") == "0"


def test_a_kept_alive_connection_serves_the_next_fetch(wire: RawServer) -> None:
    fetcher = ImpersonateClient(FetchSettings())
    for _ in range(3):
        fetcher.fetch(Request(f"{wire.base}/page"))
    assert wire.connections == 1
