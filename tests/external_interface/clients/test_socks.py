"""SOCKS5 proxies, for every client: credentials, where the name is resolved, the SSRF
guard through the tunnel, and whose fault a failure is (the proxy's or the site's)."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from config import FetchSettings
from exceptions import NetworkError, ProxyRefused, UnsafeURL
from external_interface.http import Request
from external_interface.url_guard import AddrInfo, UrlGuard
from sandbox.tunnels import Socks5Proxy
from tests.external_interface.clients.raw_server import (
    AnyClient,
    RawServer,
    client,
    fixed,
    response,
)

PAGE = response("200 OK", b"ok", Content_Length="2", Content_Type="text/plain")


@pytest.fixture(scope="module")
def site() -> Iterator[RawServer]:
    server = RawServer({"/page": fixed(PAGE, keep=True)})
    yield server
    server.close()


@pytest.fixture
def proxy() -> Iterator[Socks5Proxy]:
    with Socks5Proxy("crawler", "pw") as running:
        yield running


def named(mapping: dict[str, str]) -> UrlGuard:
    """A guard that lets loopback through and resolves names by ``mapping`` (offline)."""
    def resolve(host: str, port: int) -> list[AddrInfo]:
        return [(socket.AF_INET, (mapping[host], port))] if host in mapping else []
    return UrlGuard(["127.0.0.0/8"], resolve=resolve)


def fetcher(name: str, guard: UrlGuard | None = None) -> AnyClient:
    return client(name, FetchSettings(deadline_s=3, connect_timeout_s=1), guard)


def test_socks5_hands_the_proxy_the_address_the_guard_checked(
        client_name: str, site: RawServer, proxy: Socks5Proxy) -> None:
    guarded = fetcher(client_name, named({"shop.test": "127.0.0.1"}))
    page = guarded.fetch(Request(f"http://shop.test:{site.port}/page", proxy=proxy.url))
    assert page.body == b"ok" and proxy.asked == [("127.0.0.1", site.port)]


def test_socks5h_hands_the_proxy_the_name(
        client_name: str, site: RawServer, proxy: Socks5Proxy) -> None:
    page = fetcher(client_name).fetch(Request(f"http://localhost:{site.port}/page",
                                              proxy=proxy.url_for("socks5h")))
    assert page.body == b"ok" and proxy.asked == [("localhost", site.port)]


@pytest.mark.parametrize("scheme", ["socks5", "socks5h"])
def test_the_guard_refuses_a_private_site_before_the_proxy_is_asked(
        client_name: str, site: RawServer, proxy: Socks5Proxy, scheme: str) -> None:
    guarded = fetcher(client_name, UrlGuard())  # loopback refused
    for host in ("127.0.0.1", "localhost"):
        with pytest.raises(UnsafeURL):
            guarded.fetch(Request(f"http://{host}:{site.port}/page",
                                  proxy=proxy.url_for(scheme)))
    assert proxy.asked == []


def test_a_dead_proxy_is_the_proxys_fault(client_name: str, site: RawServer,
                                          proxy: Socks5Proxy) -> None:
    proxy.kill()
    with pytest.raises(ProxyRefused) as caught:
        fetcher(client_name).fetch(Request(f"http://127.0.0.1:{site.port}/page",
                                           proxy=proxy.url))
    assert caught.value.resource == "proxy" and "pw" not in str(caught.value)


def test_wrong_credentials_are_the_proxys_refusal(client_name: str, site: RawServer,
                                                  proxy: Socks5Proxy) -> None:
    with pytest.raises(ProxyRefused):
        fetcher(client_name).fetch(Request(f"http://127.0.0.1:{site.port}/page",
                                           proxy=proxy.url.replace(":pw@", ":wrong@")))
    assert proxy.asked == []


def test_a_site_the_proxy_cannot_reach_is_the_sites_fault(
        client_name: str, proxy: Socks5Proxy) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    with pytest.raises(NetworkError):
        fetcher(client_name).fetch(Request(f"http://127.0.0.1:{closed}/page", proxy=proxy.url))
    assert proxy.asked == [("127.0.0.1", closed)]
