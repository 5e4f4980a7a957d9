"""What the browser client's tests share: the system Chromium or a skip naming the package,
the JavaScript shop on loopback, and a client whose SSRF guard lets only the shop in."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import psutil
import pytest

from config import BrowserSettings, FetchSettings
from external_interface.clients.browser import BrowserClient
from external_interface.clients.browser_pool import MARKER
from external_interface.url_guard import UrlGuard
from sandbox.js.__main__ import serve
from sandbox.js.catalogue import Catalogue
from sandbox.loop_server import LoopServer

NO_CHROMIUM = ("no Chromium: apt-get install chromium (./control.sh setup does, as root) or "
               "set BROWSER_EXECUTABLE")


def need_chromium() -> None:
    if BrowserSettings().chromium() is None:
        pytest.skip(NO_CHROMIUM)


@contextmanager
def shop(products: int = 9) -> Iterator[LoopServer]:
    server = serve(Catalogue(1, products)).start_in_thread()
    try:
        yield server
    finally:
        server.close()


def client_for(server: LoopServer, **fetch: object) -> BrowserClient:
    """A browser client with the guard on, the shop's address its one exception."""
    allow = server.url.split("//", 1)[1]
    settings = FetchSettings(**{"deadline_s": 20.0, **fetch})  # type: ignore[arg-type]
    return BrowserClient(settings, BrowserSettings(), UrlGuard([allow]))


def browser_processes() -> list[psutil.Process]:
    """Every Chromium a browser pool of this machine launched (its marker switch)."""
    found = []
    for process in psutil.process_iter(["cmdline"]):
        with_marker = any(arg.startswith(MARKER) for arg in process.info["cmdline"] or ())
        if with_marker:
            found.append(process)
    return found
