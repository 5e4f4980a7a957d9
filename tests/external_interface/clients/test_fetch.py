"""The fetch bounds against a real loopback server that misbehaves on purpose, for every
client; then what goes on the wire."""

from __future__ import annotations

import gzip
import os
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from config import FetchSettings
from exceptions import (
    Banned,
    NetworkError,
    NotFound,
    RateLimited,
    ResponseRejected,
    ServerError,
    SessionExpired,
)
from external_interface.clients.http import HttpClient
from external_interface.http import Request
from tests.external_interface.clients.raw_server import (
    AnyClient,
    RawServer,
    client,
    fixed,
    response,
)

BOMB = gzip.compress(b"\0" * (64 * 1024 * 1024))


class Hostile(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:
        pass

    def reply(self, status: int, body: bytes = b"", **headers: str) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name.replace("_", "-"), value)
        if "Content_Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        routes: dict[str, Callable[[], None]] = {
            "/ok": lambda: self.reply(200, b"hello"),
            "/drip": self.drip,
            "/bomb": lambda: self.reply(200, BOMB, Content_Encoding="gzip"),
            "/huge": lambda: self.reply(200, b"x" * 3_000_000),
            "/loop": lambda: self.reply(302, Location="/loop"),
            "/hop": lambda: self.reply(301, Location="/ok"),
            "/to-ftp": lambda: self.reply(302, Location="ftp://127.0.0.1/x"),
            "/429": lambda: self.reply(429, Retry_After="7"),
            "/503": lambda: self.reply(503),
            "/404": lambda: self.reply(404),
            "/403": lambda: self.reply(403),
            "/401": lambda: self.reply(401),
        }
        routes[self.path]()

    def drip(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "100000")
        self.end_headers()
        try:
            for _ in range(1000):
                self.wfile.write(b"x")
                time.sleep(0.05)
        except OSError:
            pass


class QuietServer(ThreadingHTTPServer):
    def handle_error(self, request: object, client_address: object) -> None:
        """The fetcher hangs up on purpose (caps, deadlines): not an error here."""


@pytest.fixture(scope="module")
def base() -> Iterator[str]:
    server = QuietServer(("127.0.0.1", 0), Hostile)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


@pytest.fixture
def fetcher(client_name: str) -> AnyClient:
    return client(client_name, FetchSettings(deadline_s=1.5, read_timeout_s=5,
                                             max_body_bytes=1_000_000))


def test_plain_page_is_read_whole(fetcher: AnyClient, base: str) -> None:
    response = fetcher.fetch(Request(f"{base}/ok"))
    assert (response.status, response.body) == (200, b"hello")


def test_slow_drip_is_cut_at_the_wall_clock_deadline(client_name: str, base: str) -> None:
    fetcher = client(client_name, FetchSettings(deadline_s=0.5, read_timeout_s=5))
    started = time.monotonic()
    with pytest.raises(NetworkError):
        fetcher.fetch(Request(f"{base}/drip"))
    assert time.monotonic() - started < 2.0  # deadline 0.5 s, read timeout 5 s


def test_decompression_bomb_stops_at_the_decoded_cap(fetcher: AnyClient, base: str) -> None:
    with pytest.raises(ResponseRejected, match="decoded bytes"):
        fetcher.fetch(Request(f"{base}/bomb"))


def test_declared_oversize_body_is_refused_before_reading(
        fetcher: AnyClient, base: str) -> None:
    with pytest.raises(ResponseRejected, match="Content-Length"):
        fetcher.fetch(Request(f"{base}/huge"))


def test_redirect_is_followed_and_a_loop_is_refused(fetcher: AnyClient, base: str) -> None:
    assert fetcher.fetch(Request(f"{base}/hop")).url.endswith("/ok")
    with pytest.raises(ResponseRejected, match="redirects"):
        fetcher.fetch(Request(f"{base}/loop"))


def test_redirect_to_a_non_http_scheme_is_refused(fetcher: AnyClient, base: str) -> None:
    with pytest.raises(ResponseRejected, match="ftp"):
        fetcher.fetch(Request(f"{base}/to-ftp"))


@pytest.mark.parametrize(("path", "error"), [
    ("/429", RateLimited), ("/503", ServerError), ("/404", NotFound),
    ("/403", Banned), ("/401", SessionExpired),
])
def test_statuses_raise_the_branch_that_says_what_to_do(
        fetcher: AnyClient, base: str, path: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        fetcher.fetch(Request(f"{base}{path}"))


def test_rate_limit_carries_the_servers_retry_after(fetcher: AnyClient, base: str) -> None:
    with pytest.raises(RateLimited) as caught:
        fetcher.fetch(Request(f"{base}/429"))
    assert caught.value.retry_after == 7.0 and caught.value.status == 429


def test_connection_refused_is_a_network_error(fetcher: AnyClient) -> None:
    with pytest.raises(NetworkError):
        fetcher.fetch(Request("http://127.0.0.1:9/"))


# -- what goes on the wire (the http client's; impersonate's: test_impersonate) ---------
@pytest.fixture
def wire() -> Iterator[RawServer]:
    """Records every request head; ``/page`` answers 200, the others redirect."""
    srv = RawServer({"/page": fixed(response("200 OK", b"ok", Content_Length="2"), keep=True),
                     "/login": fixed(response("302 Found", Location="/page", Set_Cookie="sid=new",
                                              Content_Length="0"), keep=True),
                     "/see-other": fixed(response("303 See Other", Location="/page",
                                                  Content_Length="0"))})
    yield srv
    srv.close()


def test_a_head_requests_answer_has_no_body_whatever_its_head_says(
        client_name: str, wire: RawServer) -> None:
    fetcher = client(client_name)
    wire.routes["/size"] = fixed(response("200 OK", Content_Length="5", Content_Type="text/html",
                                          Transfer_Encoding="chunked"), keep=True)
    head = fetcher.fetch(Request(f"{wire.base}/size", method="HEAD"))
    assert (head.status, head.body, head.headers["content-length"]) == (200, b"", "5")
    assert fetcher.fetch(Request(f"{wire.base}/page")).body == b"ok"  # the same connection
    assert wire.heads[0].startswith(b"HEAD /size ") and wire.connections == 1


def test_params_are_urlencoded_after_the_urls_own_query(wire: RawServer) -> None:
    response = HttpClient(FetchSettings()).fetch(
        Request(f"{wire.base}/page?x=1#top", params={"q": "a b", "city": "Zürich~"}))
    assert wire.heads[0].startswith(b"GET /page?x=1&q=a+b&city=Z%C3%BCrich~ HTTP/1.1\r\n")
    assert response.url == f"{wire.base}/page?x=1&q=a+b&city=Z%C3%BCrich~#top"


def test_cookies_become_one_cookie_header_unless_one_is_given(wire: RawServer) -> None:
    fetcher = HttpClient(FetchSettings())
    fetcher.fetch(Request(f"{wire.base}/page", cookies={"sid": "abc", "lang": "en"}))
    fetcher.fetch(Request(f"{wire.base}/page", cookies={"sid": "abc"}, headers={"cookie": "x=1"}))
    assert b"\r\nCookie: sid=abc; lang=en\r\n" in wire.heads[0]
    assert b"\r\ncookie: x=1\r\n" in wire.heads[1] and b"sid=abc" not in wire.heads[1]


def test_credentials_in_the_url_are_sent_as_basic_auth_only(wire: RawServer) -> None:
    HttpClient(FetchSettings()).fetch(Request(wire.base.replace("//", "//us%40r:p%3Aw@") + "/page"))
    assert wire.heads[0].startswith(b"GET /page HTTP/1.1\r\n")
    assert b"\r\nHost: 127.0.0.1:" in wire.heads[0]
    assert b"\r\nAuthorization: Basic dXNAcjpwOnc=\r\n" in wire.heads[0]  # us@r:p:w


def test_no_cookie_outlives_its_fetch(client_name: str, wire: RawServer) -> None:
    fetcher = client(client_name)
    fetcher.fetch(Request(f"{wire.base}/login"))
    fetcher.fetch(Request(f"{wire.base}/page"))
    assert not any(b"sid=new" in head for head in wire.heads)


def test_a_body_is_sent_with_its_length_and_an_empty_post_with_zero(wire: RawServer) -> None:
    fetcher = HttpClient(FetchSettings())
    fetcher.fetch(Request(f"{wire.base}/page", method="POST", data=b"a=1&b=2"))
    fetcher.fetch(Request(f"{wire.base}/page", method="POST"))
    fetcher.fetch(Request(f"{wire.base}/page"))
    assert b"\r\nContent-Length: 7\r\n" in wire.heads[0]
    assert b"\r\nContent-Length: 0\r\n" in wire.heads[1]
    assert b"Content-Length" not in wire.heads[2]


def test_see_other_turns_a_post_into_a_get_without_its_body(wire: RawServer) -> None:
    HttpClient(FetchSettings()).fetch(Request(
        f"{wire.base}/see-other", method="POST", data=b"a=1",
        headers={"Content-Type": "application/x-www-form-urlencoded", "X-Kept": "1"}))
    assert wire.heads[0].startswith(b"POST /see-other ")
    assert wire.heads[1].startswith(b"GET /page ") and b"X-Kept: 1" in wire.heads[1]
    assert b"Content-Type" not in wire.heads[1] and b"Content-Length" not in wire.heads[1]


@pytest.mark.parametrize(("host", "kept"), [("127.0.0.1", True), ("localhost", False)])
def test_cookies_follow_a_redirect_on_their_host_only(host: str, kept: bool) -> None:
    other = RawServer({"/landing": fixed(response("200 OK", b"ok", Content_Length="2"))})
    first = RawServer({"/go": fixed(response(
        "302 Found", Location=f"http://{host}:{other.port}/landing", Content_Length="0"))})
    try:
        HttpClient(FetchSettings()).fetch(Request(f"{first.base}/go", cookies={"sid": "abc"},
                                               headers={"Cookie": "theme=dark"}))
        assert b"sid=abc" not in first.heads[0] and b"Cookie: theme=dark" in first.heads[0]
        assert (b"Cookie: theme=dark" in other.heads[0]) is kept
    finally:
        first.close()
        other.close()


def test_a_forked_child_opens_its_own_connections(client_name: str, wire: RawServer) -> None:
    fetcher = client(client_name)
    fetcher.fetch(Request(f"{wire.base}/page"))
    child = os.fork()
    if child == 0:  # the child: fetch once, report by exit status
        try:
            fetcher.fetch(Request(f"{wire.base}/page"))
        finally:
            os._exit(0)
    os.waitpid(child, 0)
    fetcher.fetch(Request(f"{wire.base}/page"))  # the parent's connection is still its own
    assert len(wire.heads) == 3 and wire.connections == 2
