"""Exit proxies: real forward proxies on loopback, each seen by the site as its own address."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from config import FetchSettings
from exceptions import Banned
from external_interface.clients.http import HttpClient
from external_interface.http import Request
from sandbox.defences import Defences
from sandbox.exits import Exits, exit_address, running_exits
from sandbox.server import SandboxServer, Site
from sandbox.world import World


@pytest.fixture(scope="module")
def exits() -> Iterator[Exits]:
    with running_exits(3) as running:
        yield running


@pytest.fixture(scope="module")
def server(exits: Exits) -> Iterator[SandboxServer]:
    burnt = frozenset({exits.addresses[2]})
    running = SandboxServer(Site(World(seed=7), defences=Defences(banned_exits=burnt)))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


def test_exit_addresses_count_up_from_127_0_0_11() -> None:
    assert [exit_address(i) for i in range(3)] == ["127.0.0.11", "127.0.0.12", "127.0.0.13"]


def test_through_each_proxy_the_site_sees_that_proxys_exit_address(
        exits: Exits, server: SandboxServer) -> None:
    fetcher = HttpClient(FetchSettings())
    before = len(server.hits())
    for url in exits.urls[:2]:
        for page in ("1", "2"):
            response = fetcher.fetch(Request(f"{server.base_url}/h5/feed",
                                             params={"page": page}, proxy=url))
            assert response.json()["page"] == int(page)
    seen = server.hits()[before:]
    assert [h.client for h in seen] == ["127.0.0.11"] * 2 + ["127.0.0.12"] * 2
    assert len({h.client_port for h in seen}) == 2  # each proxy keeps its upstream alive


def test_the_site_bans_one_exit_while_the_others_still_work(
        exits: Exits, server: SandboxServer) -> None:
    fetcher = HttpClient(FetchSettings())
    url = f"{server.base_url}/h5/feed"
    with pytest.raises(Banned):
        fetcher.fetch(Request(url, params={"page": "1"}, proxy=exits.urls[2]))
    assert fetcher.fetch(Request(url, params={"page": "1"}, proxy=exits.urls[0])).status == 200


def test_a_proxy_refuses_to_leave_loopback(exits: Exits) -> None:
    response = HttpClient(FetchSettings()).fetch_raw(
        Request("http://192.0.2.1/", proxy=exits.urls[0]))
    assert response.status == 403 and b"loopback" in response.body


def test_exits_write_the_file_workers_read(exits: Exits, tmp_path: Path) -> None:
    path = tmp_path / "exits.txt"
    exits.write(path)
    assert path.read_text().split() == exits.urls
