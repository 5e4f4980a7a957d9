"""A site that checks fingerprints (``sandbox.fingerprint``) lets ``impersonate`` in as the
Chrome it presents, directly, through an HTTP CONNECT proxy and through SOCKS5, and
refuses ``http``, whatever User-Agent it claims.

The golden values are real Chrome's (131 and later) as public fingerprinting services
record them; curl_cffi's ``chrome146`` profile matches them exactly.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from config import FetchSettings
from external_interface.clients.impersonate import PROFILE
from external_interface.http import Request, Response
from sandbox.fingerprint.server import FingerprintServer, agent_family
from sandbox.tls import Authority, make_authority, unavailable
from sandbox.tunnels import ConnectProxy, Socks5Proxy
from tests.external_interface.clients.raw_server import client

CHROME_JA4 = "t13d1516h2_8daaf6152771_d8a2da3f94cd"
CHROME_JA3N = "8e19337e7524d2573be54efb2b0784c9"
CHROME_JA3N_TEXT = ("771,4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-"
                    "157-47-53,0-5-10-11-13-16-18-23-27-35-43-45-51-17613-65037-65281,"
                    "4588-29-23-24,0")
CHROME_AKAMAI = "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p"
FIREFOX_AGENT = "Mozilla/5.0 (X11; Linux x86_64; rv:150.0) Gecko/20100101 Firefox/150.0"
CHROME_AGENT = ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
                "Chrome/147.0.0.0 Safari/537.36")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Authority:
    """The test's own CA: the site's certificate, and what the clients trust."""
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    return make_authority(Path(tmp_path_factory.mktemp("ca")))


@pytest.fixture(scope="module")
def site(certs: Authority) -> Iterator[FingerprintServer]:
    with FingerprintServer(certs) as server:
        yield server


@pytest.fixture(scope="module")
def proxies() -> Iterator[dict[str, str]]:
    """The ways to the site: none, an HTTP CONNECT proxy, SOCKS5 resolving here or there."""
    with ConnectProxy("crawler", "pw") as connect, Socks5Proxy("crawler", "pw") as socks:
        yield {"direct": "", "connect": connect.url, "socks5": socks.url,
               "socks5h": socks.url_for("socks5h")}


def fetched(name: str, certs: Authority, site: FingerprintServer, proxy: str,
            agent: str | None = None) -> tuple[Response, dict[str, Any]]:
    """One fetch by a fresh client (no TLS session to resume), and what the site saw."""
    fetcher = client(name, FetchSettings(ca_file=str(certs.ca)))
    try:
        response = fetcher.fetch_raw(Request(f"{site.url}/page", proxy=proxy or None,
                                             headers={"User-Agent": agent} if agent else {}))
    finally:
        fetcher.close()
    return response, json.loads(response.body)


@pytest.mark.parametrize("way", ["direct", "connect", "socks5", "socks5h"])
def test_impersonate_is_let_in_as_the_chrome_it_presents(
        certs: Authority, site: FingerprintServer, proxies: dict[str, str], way: str) -> None:
    response, seen = fetched("impersonate", certs, site, proxies[way], agent=FIREFOX_AGENT)
    assert (response.status, seen["refused"]) == (200, None)
    assert (seen["ja4"], seen["ja3n"], seen["ja3n_text"]) == (
        CHROME_JA4, CHROME_JA3N, CHROME_JA3N_TEXT)
    assert (seen["alpn"], seen["akamai"]) == ("h2", CHROME_AKAMAI)
    # the agent the request asked for named Firefox: the one sent is the profile's Chrome
    assert agent_family(seen["user_agent"]) == seen["browser"] == "Chromium"
    assert f"Chrome/{PROFILE.removeprefix('chrome')}." in seen["user_agent"]


@pytest.mark.parametrize("way", ["direct", "connect", "socks5", "socks5h"])
def test_http_is_refused_even_when_it_claims_to_be_chrome(
        certs: Authority, site: FingerprintServer, proxies: dict[str, str], way: str) -> None:
    response, seen = fetched("http", certs, site, proxies[way], agent=CHROME_AGENT)
    assert response.status == 403 and seen["alpn"] == "http/1.1"
    assert seen["ja4"] != CHROME_JA4 and "is no browser's" in seen["refused"]


def test_a_chrome_handshake_under_another_browsers_agent_is_refused() -> None:
    from sandbox.fingerprint.server import judge

    assert judge(CHROME_JA4, CHROME_AKAMAI, CHROME_AGENT) == ("Chromium", None)
    browser, refused = judge(CHROME_JA4, CHROME_AKAMAI, FIREFOX_AGENT)
    assert browser == "Chromium" and refused is not None and "Firefox" in refused
    assert judge(CHROME_JA4, "1:65535|0|0|m,p,s,a", CHROME_AGENT)[1] is not None
