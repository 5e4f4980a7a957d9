"""The hostile page's traps do what they say, against the project's own fetcher, and the
private stand-in counts every connection, so "nothing reached it" is the server's word."""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from parsel import Selector

from config import FetchSettings
from exceptions import CrawlError, ResponseRejected, UnsafeURL
from external_interface.clients.http import HttpClient
from external_interface.http import Request
from external_interface.url_guard import UrlGuard
from sandbox.hostile.site import GOOD, TRAPS, UNROUTABLE, HostileSite, Trap, hostile_server
from sandbox.loop_server import LoopServer

DEADLINE_S = 1.5


@pytest.fixture(scope="module")
def hostile() -> Iterator[tuple[LoopServer, HostileSite]]:
    server, site = hostile_server(hold_s=10, bomb_mb=32)
    with server:
        yield server, site


def guarded_fetcher(site: HostileSite) -> HttpClient:
    """A careful crawler's fetcher: short deadline, 1 MB cap, guard allowing the site only."""
    return HttpClient(FetchSettings(deadline_s=DEADLINE_S, connect_timeout_s=0.5,
                                 read_timeout_s=5, max_body_bytes=1024 * 1024, max_redirects=5),
                   guard=UrlGuard([site.allow_entry]))


def outcome(fetcher: HttpClient, url: str) -> tuple[str, str, float]:
    started = time.monotonic()
    try:
        response = fetcher.fetch(Request(url))
    except CrawlError as exc:
        return "failed", f"{type(exc).__name__}: {exc}", time.monotonic() - started
    title = Selector(response.text).css("title::text").get("")
    return "fetched", title, time.monotonic() - started


def test_the_index_page_links_every_trap_and_the_good_pages(
        hostile: tuple[LoopServer, HostileSite]) -> None:
    server, site = hostile
    index = guarded_fetcher(site).fetch(Request(server.url + "/"))
    links = Selector(index.text).css("a::attr(href)").getall()
    assert links == [t.path for t in TRAPS] + list(GOOD)


def test_every_trap_ends_as_its_table_says_within_the_deadline_and_nothing_private_is_reached(
        hostile: tuple[LoopServer, HostileSite]) -> None:
    server, site = hostile
    fetcher = guarded_fetcher(site)
    with ThreadPoolExecutor(len(TRAPS)) as pool:
        results = dict(zip(TRAPS, pool.map(lambda t: outcome(fetcher, server.url + t.path),
                                           TRAPS), strict=True))
    for trap, (ended, detail, took) in results.items():
        assert ended == trap.outcome, (trap.path, detail)
        assert took < DEADLINE_S + 1.5, (trap.path, took)
    private: list[Trap] = [t for t in TRAPS if t.reason == "private address"]
    assert len(private) == 4
    assert all(results[t][1].startswith(UnsafeURL.__name__) for t in private)
    bombs = [t for t in TRAPS if t.reason == "too large"]
    assert all(results[t][1].startswith(ResponseRejected.__name__) for t in bombs)
    assert server.tally.connections[site.private_address] == 0
    assert results[next(t for t in TRAPS if t.path == "/trap/length-short")][1] == "Short page"


def test_a_forged_second_answer_on_the_connection_is_never_taken(
        hostile: tuple[LoopServer, HostileSite]) -> None:
    server, site = hostile
    fetcher = guarded_fetcher(site)
    assert outcome(fetcher, server.url + "/trap/length-short")[1] == "Short page"
    assert outcome(fetcher, server.url + GOOD[0])[1] == "Good page 1"


def test_the_private_stand_in_counts_a_connection_when_one_is_made() -> None:
    server, site = hostile_server(hold_s=1, bomb_mb=1)
    with server:
        host, port = site.private_address.split(":")
        with socket.create_connection((host, int(port)), timeout=2) as sock:
            sock.sendall(b"GET /secret HTTP/1.0\r\n\r\n")
            assert sock.recv(1000).endswith(b"secret")
        assert server.tally.connections[site.private_address] == 1


def test_redirects_off_this_machine_are_linked_only_when_asked() -> None:
    default, asked = (HostileSite("http://127.0.0.1:1", "http://127.0.0.2:2", unroutable=u,
                                  bomb_mb=1) for u in (False, True))
    assert not set(UNROUTABLE) & set(default.traps)
    assert set(UNROUTABLE) <= set(asked.traps)
    assert b"10.0.0.1" not in default.routes["/"].body  # type: ignore[union-attr]
