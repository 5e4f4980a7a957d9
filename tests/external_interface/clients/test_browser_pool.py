"""The browser pool's lifetimes on the system Chromium: a browser killed under a page, one
that hangs, one that served its pages; each replaced, no process left behind."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import psutil
import pytest

from config import BrowserSettings, FetchSettings
from exceptions import NetworkError
from external_interface.clients.browser import BrowserClient
from external_interface.http import Request
from sandbox.loop_server import LoopServer
from tests.external_interface.clients.browser_support import need_chromium, shop

pytestmark = pytest.mark.slow


@pytest.fixture
def server() -> Iterator[LoopServer]:
    need_chromium()
    with shop() as served:
        yield served


def _alive(processes: list[psutil.Process]) -> list[psutil.Process]:
    return [p for p in processes if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def test_a_browser_killed_under_a_page_fails_that_page_and_is_replaced(
        server: LoopServer) -> None:
    client = BrowserClient(FetchSettings(deadline_s=15), BrowserSettings())
    try:
        client.fetch_raw(Request(server.url + "/product/1000"))
        first = client.pool.processes()
        with ThreadPoolExecutor(1) as pool:
            hanging = pool.submit(client.fetch_raw, Request(server.url + "/fault/hang"))
            for process in first:
                process.send_signal(signal.SIGKILL)
            with pytest.raises(NetworkError):
                hanging.result(timeout=30)
        again = client.fetch_raw(Request(server.url + "/product/1001"))
        assert again.css("h1.name::text").get()
        assert client.pool.launched == 2
    finally:
        client.close()


def test_a_hung_browser_is_killed_and_replaced_past_the_deadline(server: LoopServer) -> None:
    client = BrowserClient(FetchSettings(deadline_s=5), BrowserSettings())
    try:
        client.fetch_raw(Request(server.url + "/product/1000"))
        frozen = client.pool.processes()
        for process in frozen:
            process.send_signal(signal.SIGSTOP)  # nothing of it answers any more
        with pytest.raises(NetworkError, match="killed and replaced"):
            client.fetch_raw(Request(server.url + "/product/1001"))
        assert client.fetch_raw(Request(server.url + "/product/1002")).status == 200
        assert client.pool.launched == 2
        assert _alive(frozen) == []
    finally:
        client.close()


def test_a_browser_is_recycled_after_its_pages_and_the_old_one_ends(
        server: LoopServer) -> None:
    client = BrowserClient(FetchSettings(deadline_s=15), BrowserSettings(recycle_pages=3))
    try:
        seen: list[psutil.Process] = []
        for n in range(7):
            client.fetch_raw(Request(f"{server.url}/product/{1000 + n}"))
            seen += client.pool.processes()
        assert client.pool.launched == 3
        current = client.pool.processes()
        assert _alive([p for p in seen if p not in current]) == []
    finally:
        client.close()
    assert _alive(current) == []


def test_a_page_eating_memory_ends_and_the_next_page_renders(server: LoopServer) -> None:
    client = BrowserClient(FetchSettings(deadline_s=8), BrowserSettings())
    try:
        try:
            hog = client.fetch_raw(Request(server.url + "/fault/hog"))
            assert hog.css("p::text").get() == "hog"  # it loaded before its heap ran out
        except NetworkError:
            pass  # its tab crashed at the heap cap, or the deadline ended it
        page = client.fetch_raw(Request(server.url + "/product/1003"))
        assert page.css("h1.name::text").get()
        assert client.pool.memory_mb() < 2048
    finally:
        client.close()
