"""Redirects from hostile and broken servers: chains and loops stop at the hop cap,
only http(s) is followed, an odd Location is refused or encoded, and credentials
stay with their origin. The bodies and drips of redirects are in
``test_fetch_hostile``.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from exceptions import ResponseRejected
from external_interface.http import Request
from tests.external_interface.clients.raw_server import (
    MB,
    AnyClient,
    Handler,
    RawServer,
    fetch_fails,
    fixed,
    hostile_fetcher,
    redirect,
    response,
)


def _chain(conn: socket.socket, head: bytes) -> bool:
    left = int(head.split(b" ")[1].split(b"=")[1])
    answer = response("200 OK", b"end", Content_Length="3") if left == 0 else \
        response("302 Found", Location=f"/chain?left={left - 1}", Content_Length="0")
    conn.sendall(answer)
    return True


def _routes() -> dict[str, Handler]:
    routes = {
        "/chain": _chain,
        "/loop": redirect("/loop", keep=True),
        "/bad-location": redirect("http://[bad/x"),
        "/utf8-location": fixed(("HTTP/1.1 302 Found\r\nContent-Length: 0\r\nLocation: "
                                 "/caf\u00e9 menu?q=a b#frag\r\n\r\n").encode("utf-8"), True),
        "/caf%C3%A9%20menu": fixed(response("200 OK", b"menu", Content_Length="4"), True),
    }
    for target in ("javascript:alert(1)", "mailto:a@b.c", "data:text/html,x",
                   "file:///etc/passwd", "ftp://127.0.0.1/x", "gopher://127.0.0.1/"):
        routes[f"/to/{target.split(':')[0]}"] = redirect(target)
    return routes


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    srv = RawServer(_routes())
    yield srv
    srv.close()


@pytest.fixture
def fetcher(client_name: str) -> AnyClient:
    return hostile_fetcher(MB, client_name)


def test_a_redirect_chain_within_the_cap_is_followed(
        fetcher: AnyClient, server: RawServer) -> None:
    response = fetcher.fetch(Request(server.base + "/chain?left=5"))
    assert response.body == b"end" and response.url.endswith("/chain?left=0")


@pytest.mark.parametrize("path", ["/chain?left=6", "/loop"])
def test_long_chains_and_loops_stop_at_the_hop_cap(
        fetcher: AnyClient, server: RawServer, path: str) -> None:
    assert "redirects" in str(fetch_fails(fetcher, Request(server.base + path), ResponseRejected))


@pytest.mark.parametrize("scheme", ["javascript", "mailto", "data", "file", "ftp", "gopher"])
def test_redirects_to_non_http_schemes_are_refused(
        fetcher: AnyClient, server: RawServer, scheme: str) -> None:
    error = fetch_fails(fetcher, Request(f"{server.base}/to/{scheme}"), ResponseRejected)
    assert scheme in str(error) and error.status == 302


def test_an_unparseable_location_is_refused(fetcher: AnyClient, server: RawServer) -> None:
    fetch_fails(fetcher, Request(server.base + "/bad-location"), ResponseRejected)


def test_a_raw_utf8_location_with_spaces_is_followed_percent_encoded(
        fetcher: AnyClient, server: RawServer) -> None:
    response = fetcher.fetch(Request(server.base + "/utf8-location"))
    assert response.body == b"menu"
    assert response.url.endswith("/caf%C3%A9%20menu?q=a%20b")


def test_authorization_is_dropped_when_a_redirect_leaves_the_origin(fetcher: AnyClient) -> None:
    other = RawServer({"/landing": fixed(response("200 OK", b"ok", Content_Length="2"))})
    first = RawServer({"/go": fixed(response("302 Found", Location=f"{other.base}/landing",
                                             Content_Length="0"))})
    try:
        fetcher.fetch(Request(f"{first.base}/go", headers={"Authorization": "Bearer t0ken",
                                                            "X-Site": "kept"}))
        assert b"Bearer t0ken" in first.heads[0]
        assert b"t0ken" not in other.heads[0] and b"X-Site: kept" in other.heads[0]
    finally:
        first.close()
        other.close()
