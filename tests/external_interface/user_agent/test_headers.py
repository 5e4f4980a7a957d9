"""Default request headers: a browser's identity, stable per unit, overridable per site."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import get_args

import brotli
import pytest
from pydantic import ValidationError

from config import FetchSettings, HeaderSettings, SiteHeaders
from external_interface.clients.http import HttpClient
from external_interface.http import Request
from external_interface.user_agent.browsers import HEADER_SETS
from external_interface.user_agent.headers import default_headers, families, site_headers
from sandbox.defences import agent_matches

LIBRARY_AGENTS = ("python", "urllib", "requests", "scrapy", "curl", "wget", "bot", "crawl")


def test_every_family_sends_a_browsers_agent_with_its_accept_language_and_encodings() -> None:
    for family in families():
        for i in range(100):
            headers = default_headers(family, f"unit-{i}")
            assert set(headers) == {"User-Agent", "Accept", "Accept-Language",
                                    "Accept-Encoding"}
            agent = headers["User-Agent"]
            assert agent.startswith("Mozilla/5.0 (")
            assert not any(word in agent.lower() for word in LIBRARY_AGENTS)
            assert agent_matches(family, agent)
            assert headers["Accept"].startswith("text/html,application/xhtml+xml")
            assert headers["Accept-Language"].startswith("en-US")
            assert headers["Accept-Encoding"] == "gzip, deflate, br"


def test_the_accept_header_is_the_one_the_agents_browser_sends() -> None:
    for i in range(100):
        headers = default_headers("desktop", str(i))
        chromium = "Chrome/" in headers["User-Agent"]
        assert ("image/avif" in headers["Accept"]) == chromium


def test_a_key_keeps_its_identity_and_keys_spread_over_the_family() -> None:
    assert default_headers("mobile", "unit-7") == default_headers("mobile", "unit-7")
    seen = {default_headers("desktop", f"u{i}")["User-Agent"] for i in range(300)}
    assert seen == {agent for agent, _, _ in HEADER_SETS["desktop"]}


def test_no_family_means_desktop_and_an_unknown_one_names_the_known_ones() -> None:
    assert default_headers(None, "k") == default_headers("desktop", "k")
    with pytest.raises(ValueError, match="desktop, mobile"):
        default_headers("smart-fridge", "k")


def test_a_sites_own_headers_go_over_the_defaults_whatever_their_case() -> None:
    site = SiteHeaders(family="mobile", headers={"accept-language": "de-DE,de;q=0.9",
                                                  "Referer": "https://example.org/"})
    headers = site_headers(site, "unit-1")
    assert headers["accept-language"] == "de-DE,de;q=0.9"
    assert "Accept-Language" not in headers
    assert headers["Referer"] == "https://example.org/"
    assert agent_matches("mobile", headers["User-Agent"])


def test_a_site_is_configured_in_one_line_and_the_environment_overrides_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    declared = SiteHeaders(family="mobile")
    assert HeaderSettings().for_site("demo", declared).family == "mobile"
    assert HeaderSettings().for_site("other").family == "desktop"
    monkeypatch.setenv("HEADERS_FAMILY", "mobile")
    monkeypatch.setenv("HEADERS_SITES", '{"demo": {"family": "desktop", "headers": {"X": "1"}}}')
    settings = HeaderSettings()
    assert settings.for_site("demo", declared) == SiteHeaders(family="desktop",
                                                              headers={"X": "1"})
    assert settings.for_site("other").family == "mobile"


def test_a_family_the_data_does_not_have_is_refused_when_the_settings_are_read() -> None:
    family = get_args(get_args(SiteHeaders.model_fields["family"].annotation)[0])
    assert set(family) == set(families())
    with pytest.raises(ValidationError, match="desktop"):
        SiteHeaders(family="tablet")


class Echo(BaseHTTPRequestHandler):
    """Answers with the body compressed as the request's Accept-Encoding allows."""

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        accepted = self.headers.get("Accept-Encoding", "")
        body, encoding = b"<p>hello</p>" * 100, ""
        if "br" in accepted:
            body, encoding = brotli.compress(body), "br"
        elif "gzip" in accepted:
            body, encoding = gzip.compress(body), "gzip"
        self.server.seen.append(dict(self.headers))  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if encoding:
            self.send_header("Content-Encoding", encoding)
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def echo() -> Iterator[ThreadingHTTPServer]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Echo)
    server.seen = []  # type: ignore[attr-defined]
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


def test_the_fetch_sends_them_and_decodes_every_encoding_they_accept(
        echo: ThreadingHTTPServer) -> None:
    headers = default_headers("desktop", "unit-3")
    url = f"http://127.0.0.1:{echo.server_address[1]}/"
    response = HttpClient(FetchSettings()).fetch(Request(url, headers=headers))
    assert response.body == b"<p>hello</p>" * 100
    sent = echo.seen[0]  # type: ignore[attr-defined]
    assert sent["User-Agent"] == headers["User-Agent"]
    assert sent["Accept"] == headers["Accept"]
    assert sent["Accept-Encoding"] == "gzip, deflate, br"
