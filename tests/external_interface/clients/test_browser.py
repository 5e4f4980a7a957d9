"""The browser client on the system Chromium against real servers on loopback: the DOM a
script built, what the step asked the page to do, every fetch bound, the guard on every
connection a page makes. Skipped, naming the package, where there is no Chromium."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from config import BrowserSettings, FetchSettings
from exceptions import NetworkError, NotSupported, ResponseRejected, UnsafeURL
from external_interface.clients.browser import BrowserClient
from external_interface.http import Browse, Request
from external_interface.http_cache import CachingFetcher
from external_interface.http_cache.filesystem import FilesystemCache
from external_interface.url_guard import UrlGuard
from sandbox.loop_server import LoopServer
from tests.external_interface.clients.browser_support import (
    browser_processes,
    client_for,
    need_chromium,
    shop,
)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[LoopServer, BrowserClient]]:
    need_chromium()
    with shop() as server:
        client = client_for(server)
        yield server, client
        client.close()


def _blocked(server: LoopServer) -> dict[str, int]:
    with urllib.request.urlopen(server.url + "/__blocked", timeout=5) as answer:
        return dict(json.loads(answer.read()))


def test_the_response_holds_the_dom_the_script_built(
        served: tuple[LoopServer, BrowserClient]) -> None:
    server, client = served
    response = client.fetch_raw(Request(server.url + "/app", browse=Browse(wait_for="li.row")))
    assert response.status == 200
    assert len(response.css("li.row a.product::attr(href)").getall()) == 3
    assert response.headers["content-type"] == "text/html; charset=utf-8"


def test_a_click_reveals_and_a_scroll_loads_every_row(
        served: tuple[LoopServer, BrowserClient]) -> None:
    server, client = served
    revealed = client.fetch_raw(Request(server.url + "/reveal",
                                         browse=Browse(click=("#show",), wait_for="li.row")))
    assert len(revealed.css("li.row")) == 3
    scrolled = client.fetch_raw(Request(server.url + "/scroll", browse=Browse(
        wait_for="li.row", scroll=20, scroll_until="#end", screenshot=True)))
    assert len(scrolled.css("li.row")) == 3 and scrolled.css("#end")
    assert scrolled.screenshot is not None and scrolled.screenshot.startswith(b"\x89PNG")


def test_a_list_whose_end_never_shows_fails_rather_than_pass_for_complete(
        served: tuple[LoopServer, BrowserClient]) -> None:
    server, client = served
    with pytest.raises(NetworkError, match="never appeared"):
        client.fetch_raw(Request(server.url + "/scroll", browse=Browse(
            wait_for="li.row", scroll=2, scroll_until="#no-such-end")))


def test_images_fonts_and_media_are_never_requested(
        served: tuple[LoopServer, BrowserClient]) -> None:
    server, client = served
    before = _blocked(server)
    page = client.fetch_raw(Request(server.url + "/product/1000", browse=Browse(idle=True)))
    assert page.css("h1.name::text").get()
    assert _blocked(server) == before == {"image": 0, "font": 0, "media": 0}


def test_a_json_document_is_handed_on_as_its_own_bytes(
        served: tuple[LoopServer, BrowserClient]) -> None:
    server, client = served
    response = client.fetch_raw(Request(server.url + "/__expected"))
    assert len(response.json()["products"]) == 9


def test_the_rendered_document_is_capped() -> None:
    need_chromium()
    with shop() as server:
        client = client_for(server, max_body_bytes=200)
        try:
            with pytest.raises(ResponseRejected, match="cap of 200"):
                client.fetch_raw(Request(server.url + "/product/1000"))
        finally:
            client.close()


def test_the_deadline_ends_a_page_that_never_finishes_loading() -> None:
    need_chromium()
    with shop() as server:
        client = client_for(server, deadline_s=2.0)
        try:
            with pytest.raises(NetworkError, match="deadline"):
                client.fetch_raw(Request(server.url + "/fault/hang"))
            assert client.fetch_raw(Request(server.url + "/product/1001")).status == 200
        finally:
            client.close()



def send_html(handler: BaseHTTPRequestHandler, body: bytes) -> None:
    """A 200 with ``body`` as text/html: what the test pages answer."""
    handler.send_response(200)
    handler.send_header("Content-Type", "text/html")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)

class _Hostile(BaseHTTPRequestHandler):
    """A page whose script, image, frame, fetch() and redirects all aim at ``FORBIDDEN``."""

    forbidden = ""

    def do_GET(self) -> None:
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", f"{self.forbidden}/hop")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        f = self.forbidden
        body = (f'<html><body><script src="{f}/s.js"></script><img src="{f}/i.png">'
                f'<iframe src="{f}/frame"></iframe><img src="/redirect-img">'
                f'<script>fetch("{f}/api").catch(() => 0); fetch("/redirect-fetch")'
                '.catch(() => 0);</script><p id="ok">page</p></body></html>').encode()
        send_html(self, body)

    def log_message(self, *args: object) -> None:
        pass


def test_no_request_of_a_page_reaches_a_forbidden_port() -> None:
    """Script, image, frame, fetch(), redirects of a subresource, of a fetch() and of the
    navigation itself: the guard's proxy refuses them all; the forbidden port's own
    listening socket counts 0 connections."""
    need_chromium()
    accepted: list[int] = []
    with socket.socket() as forbidden:
        forbidden.bind(("127.0.0.1", 0))
        forbidden.listen(64)
        forbidden.settimeout(0.2)
        stop = threading.Event()

        def count() -> None:
            while not stop.is_set():
                try:
                    conn, _ = forbidden.accept()
                except OSError:
                    continue
                accepted.append(1)
                conn.close()

        counter = threading.Thread(target=count, daemon=True)
        counter.start()
        _Hostile.forbidden = f"http://127.0.0.1:{forbidden.getsockname()[1]}"
        site = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
        threading.Thread(target=site.serve_forever, daemon=True).start()
        url = f"http://127.0.0.1:{site.server_port}"
        client = BrowserClient(FetchSettings(deadline_s=20), BrowserSettings(),
                               UrlGuard([f"127.0.0.1:{site.server_port}"]))
        try:
            page = client.fetch_raw(Request(url + "/", browse=Browse(idle=True, block=())))
            assert page.css("#ok::text").get() == "page"
            with pytest.raises(UnsafeURL):
                client.fetch_raw(Request(url + "/redirect-page"))
            with pytest.raises(UnsafeURL):
                client.fetch_raw(Request(_Hostile.forbidden + "/direct"))
            refused = sum(p.refused for p in client.pool.proxies())
        finally:
            client.close()
            site.shutdown()
            stop.set()
            counter.join(5)
    assert refused >= 6
    assert accepted == []


def test_the_development_cache_replays_a_rendered_page(
        served: tuple[LoopServer, BrowserClient], tmp_path: Path) -> None:
    server, client = served
    cached = CachingFetcher(client, FilesystemCache(tmp_path))
    request = Request(server.url + "/app", browse=Browse(wait_for="li.row"))
    first = cached.fetch_raw(request)
    asked = server.tally.requests("/api/app")
    again = cached.fetch_raw(request)
    assert again.from_cache and again.body == first.body
    assert len(again.css("li.row")) == 3
    assert server.tally.requests("/api/app") == asked


def test_a_proxy_password_never_shows_in_an_error(
        served: tuple[LoopServer, BrowserClient]) -> None:
    server, _ = served
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = probe.getsockname()[1]
    client = BrowserClient(FetchSettings(deadline_s=10), BrowserSettings(), None)
    try:
        with pytest.raises(NetworkError) as caught:
            client.fetch_raw(Request(server.url + "/app",
                                     proxy=f"http://user:s3cret-pw@127.0.0.1:{closed}"))
    finally:
        client.close()
    assert "s3cret-pw" not in str(caught.value) + repr(caught.value)


def test_a_host_without_chromium_fails_the_step_with_the_package_to_install(
        tmp_path: Path) -> None:
    client = BrowserClient(FetchSettings(), BrowserSettings(executable=str(tmp_path / "no")))
    try:
        with pytest.raises(NotSupported) as caught:
            client.fetch_raw(Request("http://127.0.0.1:9/"))
    finally:
        client.close()
    message = str(caught.value)
    assert "apt-get install chromium" in message and "\n" not in message


def test_close_leaves_no_browser_process(served: tuple[LoopServer, BrowserClient]) -> None:
    server, _ = served
    client = client_for(server)
    client.fetch_raw(Request(server.url + "/product/1002"))
    mine = client.pool.processes()
    assert mine
    client.close()
    assert not [p for p in mine if p.is_running() and p.status() != "zombie"]
    assert not [p for p in browser_processes() if p in mine]


class _Echo(BaseHTTPRequestHandler):
    """A page showing the User-Agent, Cookie and X-Token headers its request carried."""

    def do_GET(self) -> None:
        shown = "".join(f'<p id="{name}">{self.headers.get(name, "")}</p>'
                        for name in ("User-Agent", "Cookie", "X-Token"))
        body = f"<html><body>{shown}</body></html>".encode()
        send_html(self, body)

    def log_message(self, *args: object) -> None:
        pass


def test_the_providers_user_agent_cookies_and_headers_go_out_with_the_page() -> None:
    need_chromium()
    site = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    threading.Thread(target=site.serve_forever, daemon=True).start()
    client = BrowserClient(FetchSettings(deadline_s=20), BrowserSettings())
    try:
        url = f"http://127.0.0.1:{site.server_port}/"
        page = client.fetch_raw(Request(url, headers={"User-Agent": "Pooled/1.0",
                                                      "X-Token": "t1"},
                                        cookies={"session": "abc"}))
        other = client.fetch_raw(Request(url, headers={"User-Agent": "Other/2.0"}))
    finally:
        client.close()
        site.shutdown()
    assert page.css("#User-Agent::text").get() == "Pooled/1.0"
    assert page.css("#Cookie::text").get() == "session=abc"
    assert page.css("#X-Token::text").get() == "t1"
    assert other.css("#User-Agent::text").get() == "Other/2.0"  # a context of its own
    assert not other.css("#Cookie::text").get()
