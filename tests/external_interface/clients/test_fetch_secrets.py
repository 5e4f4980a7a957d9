"""No proxy or site password in any error, traceback or log line the fetch produces.

Proxy URLs come from the proxy provider with credentials in them; a failing
proxy is an everyday event, so its error message goes to logs and the ledger.
Each case here fails for real against loopback: a closed port, a proxy that
refuses (407), resets or stays silent, a malformed or unsupported proxy URL.
"""

from __future__ import annotations

import logging
import socket
import struct
import traceback
from collections.abc import Iterator

import pytest

from config import FetchSettings
from exceptions import CrawlError
from external_interface.http import Request
from tests.external_interface.clients.raw_server import (
    RawServer,
    client,
    fixed,
    response,
    then_silent,
)

SECRET = "s3cret-pw"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _reset(conn: socket.socket, head: bytes) -> bool:
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False  # closing with linger 0 sends RST


@pytest.fixture(scope="module")
def proxies() -> Iterator[dict[str, int]]:
    """Ports of a closed port and of proxies that refuse (407), reset, or never answer."""
    refusing, resetting, silent = RawServer(), RawServer(raw=_reset), RawServer()
    silent.raw = then_silent(silent)
    yield {"closed": _closed_port(), "refusing": refusing.port, "resetting": resetting.port,
           "silent": silent.port}
    for server in (refusing, resetting, silent):
        server.close()


def _every_text(error: BaseException) -> str:
    return "\n".join([str(error), repr(error), str(getattr(error, "url", "")),
                      *traceback.format_exception(error)])


@pytest.mark.parametrize("proxy", [
    "http://crawler:{secret}@127.0.0.1:{closed}",
    "http://crawler:{secret}@127.0.0.1:{refusing}",
    "http://crawler:{secret}@127.0.0.1:{resetting}",
    "http://crawler:{secret}@127.0.0.1:{silent}",
    "http://crawler:{secret}@127.0.0.1:notaport",
    "http://crawler:{secret}@[::1",
    "socks5://crawler:{secret}@127.0.0.1:{closed}",
    "ftp://crawler:{secret}@127.0.0.1:{closed}",
])
@pytest.mark.parametrize("target", ["http://127.0.0.1:{closed}/page",
                                    "https://127.0.0.1:{closed}/page",
                                    "http://site-user:{secret}@127.0.0.1:{closed}/page",
                                    "http://site-user:{secret}@127.0.0.1:99999/page"])
def test_no_error_or_log_line_carries_a_proxy_or_url_password(
        proxies: dict[str, int], caplog: pytest.LogCaptureFixture,
        proxy: str, target: str, client_name: str) -> None:
    fetcher = client(client_name, FetchSettings(deadline_s=0.5, connect_timeout_s=0.5))
    caplog.set_level(logging.DEBUG)
    with pytest.raises(CrawlError) as caught:
        fetcher.fetch(Request(target.format(secret=SECRET, **proxies),
                              proxy=proxy.format(secret=SECRET, **proxies)))
    assert SECRET not in _every_text(caught.value)
    assert SECRET not in caplog.text


def test_proxy_credentials_travel_only_in_proxy_authorization(client_name: str) -> None:
    proxy = RawServer()  # a forwarding proxy that also serves the page itself
    page = f"http://127.0.0.1:{proxy.port}/landing"
    proxy.routes[page] = fixed(response("200 OK", b"ok", Content_Length="2"))
    try:
        fetched = client(client_name).fetch(Request(
            page.replace("//", f"//site-user:{SECRET}@"),
            proxy=f"http://crawler:{SECRET}@127.0.0.1:{proxy.port}"))
        [head] = proxy.heads
        assert fetched.body == b"ok" and head.startswith(f"GET {page} HTTP/1.1\r\n".encode())
        assert b"\r\nProxy-Authorization: Basic Y3Jhd2xlcjpzM2NyZXQtcHc=\r\n" in head
        assert b"\r\nAuthorization: Basic c2l0ZS11c2VyOnMzY3JldC1wdw==\r\n" in head
        assert SECRET.encode() not in head
    finally:
        proxy.close()
