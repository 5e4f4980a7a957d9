"""The fetch bounds against a real loopback server that misbehaves on purpose."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
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
from external_interface.fetch import Fetcher, Request, parse_retry_after

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
        routes = {
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
def fetcher() -> Fetcher:
    return Fetcher(FetchSettings(deadline_s=1.5, read_timeout_s=5, max_body_bytes=1_000_000))


def test_plain_page_is_read_whole(fetcher: Fetcher, base: str) -> None:
    response = fetcher.fetch(Request(f"{base}/ok"))
    assert (response.status, response.body) == (200, b"hello")


def test_slow_drip_is_cut_at_the_wall_clock_deadline(fetcher: Fetcher, base: str) -> None:
    started = time.monotonic()
    with pytest.raises(NetworkError):
        fetcher.fetch(Request(f"{base}/drip"))
    assert time.monotonic() - started < 3.0  # deadline 1.5 s, read timeout 5 s


def test_decompression_bomb_stops_at_the_decoded_cap(fetcher: Fetcher, base: str) -> None:
    with pytest.raises(ResponseRejected, match="decoded bytes"):
        fetcher.fetch(Request(f"{base}/bomb"))


def test_declared_oversize_body_is_refused_before_reading(fetcher: Fetcher, base: str) -> None:
    with pytest.raises(ResponseRejected, match="Content-Length"):
        fetcher.fetch(Request(f"{base}/huge"))


def test_redirect_is_followed_and_a_loop_is_refused(fetcher: Fetcher, base: str) -> None:
    assert fetcher.fetch(Request(f"{base}/hop")).url.endswith("/ok")
    with pytest.raises(ResponseRejected, match="redirects"):
        fetcher.fetch(Request(f"{base}/loop"))


def test_redirect_to_a_non_http_scheme_is_refused(fetcher: Fetcher, base: str) -> None:
    with pytest.raises(ResponseRejected, match="ftp"):
        fetcher.fetch(Request(f"{base}/to-ftp"))


@pytest.mark.parametrize(("path", "error"), [
    ("/429", RateLimited), ("/503", ServerError), ("/404", NotFound),
    ("/403", Banned), ("/401", SessionExpired),
])
def test_statuses_raise_the_branch_that_says_what_to_do(
        fetcher: Fetcher, base: str, path: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        fetcher.fetch(Request(f"{base}{path}"))


def test_rate_limit_carries_the_servers_retry_after(fetcher: Fetcher, base: str) -> None:
    with pytest.raises(RateLimited) as caught:
        fetcher.fetch(Request(f"{base}/429"))
    assert caught.value.retry_after == 7.0 and caught.value.status == 429


def test_connection_refused_is_a_network_error(fetcher: Fetcher) -> None:
    with pytest.raises(NetworkError):
        fetcher.fetch(Request("http://127.0.0.1:9/"))


def test_retry_after_accepts_seconds_and_http_dates() -> None:
    assert parse_retry_after("120") == 120.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert parse_retry_after("soon") is None
