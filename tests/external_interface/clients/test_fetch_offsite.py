"""Every redirect hop stays on the job's domains and passes the SSRF guard.

Names like ``shop.example.com`` resolve nowhere offline, so those cases go
through a forwarding proxy on loopback (a ``RawServer`` answering requests by
their absolute URL): the fetcher never resolves a proxied name, and the proxy
records every URL it was asked for. The direct cases use names that do resolve
offline: ``127.0.0.1`` against ``localhost`` from ``/etc/hosts``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from config import FetchSettings
from exceptions import OffSite, UnsafeURL
from external_interface.http import Request
from external_interface.url_guard import UrlGuard
from tests.external_interface.clients.raw_server import (
    AnyClient,
    RawServer,
    client,
    fixed,
    redirect,
    response,
)
from utils.domains import AllowedDomains

SHOP = AllowedDomains(["shop.example.com"])
OK = response("200 OK", b"ok", Content_Length="2", Connection="close")
PROXIED = {
    "http://shop.example.com/to-other": redirect("http://www.other.org/landing"),
    "http://shop.example.com/to-lookalike": redirect("http://shop.example.com.evil.org/"),
    "http://shop.example.com/to-login": redirect("http://login.example.com/form"),
    "http://shop.example.com/to-relative": redirect("/landing"),
    "http://shop.example.com/hop": redirect("http://cdn.example.com/to-other"),
    "http://cdn.example.com/to-other": redirect("http://www.other.org/landing"),
    "http://shop.example.com/landing": fixed(OK),
    "http://login.example.com/form": fixed(OK),
}


@pytest.fixture(scope="module")
def proxy() -> Iterator[RawServer]:
    srv = RawServer(dict(PROXIED))
    yield srv
    srv.close()


@pytest.fixture
def fetcher(client_name: str) -> AnyClient:
    return client(client_name, FetchSettings(deadline_s=3, connect_timeout_s=1))


def _asked(proxy: RawServer, start: int) -> list[str]:
    return [head.split(b" ")[1].decode() for head in proxy.heads[start:]]


@pytest.mark.parametrize(("path", "off_host"), [
    ("/to-other", "www.other.org"),
    ("/to-lookalike", "shop.example.com.evil.org"),
])
def test_a_redirect_off_the_allowed_domains_is_offsite_and_never_requested(
        fetcher: AnyClient, proxy: RawServer, path: str, off_host: str) -> None:
    start = len(proxy.heads)
    with pytest.raises(OffSite) as caught:
        fetcher.fetch(Request(f"http://shop.example.com{path}", proxy=proxy.base), SHOP)
    assert _asked(proxy, start) == [f"http://shop.example.com{path}"]
    assert caught.value.skip_reason == "offsite"
    assert f"a redirect leads to host {off_host!r}" in str(caught.value)
    assert caught.value.reason.startswith("OffSite: offsite:")


def test_a_later_hop_is_checked_as_well(fetcher: AnyClient, proxy: RawServer) -> None:
    start = len(proxy.heads)
    with pytest.raises(OffSite):
        fetcher.fetch(Request("http://shop.example.com/hop", proxy=proxy.base), SHOP)
    assert _asked(proxy, start) == ["http://shop.example.com/hop",
                                    "http://cdn.example.com/to-other"]


@pytest.mark.parametrize(("path", "landed"), [
    ("/to-relative", "http://shop.example.com/landing"),
    ("/to-login", "http://login.example.com/form"),  # another host, same registrable domain
])
def test_a_redirect_within_the_site_is_followed(
        fetcher: AnyClient, proxy: RawServer, path: str, landed: str) -> None:
    response = fetcher.fetch(Request(f"http://shop.example.com{path}", proxy=proxy.base), SHOP)
    assert response.body == b"ok" and response.url == landed


def test_a_start_url_off_the_domains_is_offsite_before_any_request(
        fetcher: AnyClient, proxy: RawServer) -> None:
    start = len(proxy.heads)
    with pytest.raises(OffSite, match=r"the request names host 'www\.other\.org'"):
        fetcher.fetch(Request("http://www.other.org/", proxy=proxy.base), SHOP)
    assert _asked(proxy, start) == []


def test_without_allowed_domains_every_redirect_is_followed(
        fetcher: AnyClient, proxy: RawServer) -> None:
    response = fetcher.fetch(
        Request("http://shop.example.com/to-relative", proxy=proxy.base))
    assert response.body == b"ok"


# -- direct: names that resolve offline, and the SSRF guard ---------------------------
@pytest.fixture
def target() -> Iterator[RawServer]:
    srv = RawServer({"/": fixed(OK)})
    yield srv
    srv.close()


def test_a_redirect_from_an_address_to_a_name_is_offsite_and_never_connected(
        fetcher: AnyClient, target: RawServer) -> None:
    start = RawServer({"/go": redirect(f"http://localhost:{target.port}/")})
    try:
        with pytest.raises(OffSite):
            fetcher.fetch(Request(f"{start.base}/go"), AllowedDomains(["127.0.0.1"]))
        assert start.hits["/go"] == 1 and target.connections == 0
    finally:
        start.close()


def test_a_redirect_to_a_private_address_is_refused_by_the_guard_and_never_connected(
        target: RawServer, client_name: str) -> None:
    start = RawServer({"/go": redirect(f"http://127.0.0.1:{target.port}/")})
    guarded = client(client_name, FetchSettings(deadline_s=3),
                     guard=UrlGuard([f"127.0.0.1:{start.port}"]))
    try:
        with pytest.raises(UnsafeURL, match="SSRF guard"):
            guarded.fetch(Request(f"{start.base}/go"), AllowedDomains(["127.0.0.1"]))
        assert start.hits["/go"] == 1 and target.connections == 0
    finally:
        start.close()
