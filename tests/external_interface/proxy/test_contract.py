"""Every proxy source passes one contract (static list, file, HTTP endpoint on loopback);
the proxy pool refreshes from its source once per interval, on every pool backend."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis

from external_interface.pool import Empty, Lease, Verdict
from external_interface.pool.factory import pool_factory
from external_interface.proxy import ProxyPool, claimer, member_of
from external_interface.proxy.sources import (
    FileSource,
    HttpSource,
    ProxySource,
    ProxySourceError,
    StaticSource,
)

LISTED = ["http://u:secret@127.0.0.1:3128", "http://127.0.0.2:3128", "http://127.0.0.1:3128"]


class Vendor(BaseHTTPRequestHandler):
    """A proxy vendor's API: answers whatever ``server.body`` holds."""

    server: VendorServer

    def do_GET(self) -> None:
        body = self.server.body.encode()
        self.send_response(self.server.status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class VendorServer(ThreadingHTTPServer):
    daemon_threads = True
    body = json.dumps({"proxies": LISTED})
    status = 200


@pytest.fixture
def vendor() -> Iterator[VendorServer]:
    server = VendorServer(("127.0.0.1", 0), Vendor)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.fixture(params=["static", "file", "http"])
def source(request: pytest.FixtureRequest, tmp_path: Path) -> ProxySource:
    if request.param == "static":
        return StaticSource(LISTED)
    if request.param == "file":
        path = tmp_path / "proxies.txt"
        path.write_text("# bought 2024-05\n" + "\n".join(LISTED) + "\n\n")
        return FileSource(path)
    server = request.getfixturevalue("vendor")
    return HttpSource(f"http://127.0.0.1:{server.server_address[1]}/list")


def test_every_source_lists_its_proxies_once_in_order(source: ProxySource) -> None:
    assert isinstance(source, ProxySource)
    assert source.proxies() == LISTED


def test_no_source_describes_itself_with_a_password(source: ProxySource) -> None:
    assert "secret" not in source.describe()


def test_a_missing_file_is_a_source_error(tmp_path: Path) -> None:
    with pytest.raises(ProxySourceError, match="cannot read"):
        FileSource(tmp_path / "nowhere.txt").proxies()


@pytest.mark.parametrize(("status", "body"), [(503, "down"), (200, '{"proxies": 3}')])
def test_an_endpoint_that_cannot_say_is_a_source_error(vendor: VendorServer, status: int,
                                                        body: str) -> None:
    vendor.status, vendor.body = status, body
    with pytest.raises(ProxySourceError):
        HttpSource(f"http://127.0.0.1:{vendor.server_address[1]}/").proxies()


def test_an_endpoint_may_answer_text_one_proxy_a_line(vendor: VendorServer) -> None:
    vendor.body = "\n".join(LISTED)
    assert HttpSource(f"http://127.0.0.1:{vendor.server_address[1]}/").proxies() == LISTED


@pytest.fixture(params=["redis", "memory"])
def backend(request: pytest.FixtureRequest) -> tuple[str, redis.Redis | None]:
    client = request.getfixturevalue("redis_client") if request.param == "redis" else None
    return request.param, client


def test_the_pool_reads_its_source_on_first_lease_and_keys_proxies_by_host_and_port(
        backend: tuple[str, redis.Redis | None]) -> None:
    name, client = backend
    proxies = ProxyPool(pool_factory(name, client), StaticSource(LISTED), 300, claimer(client))
    lease = proxies.lease()
    assert isinstance(lease, Lease)
    assert lease.member == member_of(lease.value) == "127.0.0.1:3128"
    assert lease.value == "http://127.0.0.1:3128"  # the later entry of the same proxy wins
    assert proxies.stats().live == 2


def test_a_banned_proxy_is_not_brought_back_by_the_next_refresh(
        backend: tuple[str, redis.Redis | None]) -> None:
    name, client = backend
    proxies = ProxyPool(pool_factory(name, client), StaticSource(LISTED), 300, claimer(client))
    proxies.refresh()
    for _ in range(3):
        proxies.report("127.0.0.2:3128", Verdict.BANNED, 1)
    proxies.refresh()
    assert proxies.stats().live == 1
    assert {getattr(proxies.lease(), "member", None) for _ in range(3)} == {"127.0.0.1:3128"}


def test_a_refresh_forgets_the_proxies_the_source_no_longer_lists(
        backend: tuple[str, redis.Redis | None]) -> None:
    name, client = backend
    pools = pool_factory(name, client)
    ProxyPool(pools, StaticSource(LISTED), 300, claimer(client)).refresh()
    moved = ProxyPool(pools, StaticSource(["http://127.0.0.3:3128"]), 300, claimer(client))
    assert moved.refresh() == (1, 2)
    assert {getattr(moved.lease(), "member", None) for _ in range(3)} == {"127.0.0.3:3128"}


def test_a_new_process_reads_the_source_on_its_first_lease_whoever_read_it_last(
        redis_client: redis.Redis) -> None:
    pools = pool_factory("redis", redis_client)
    ProxyPool(pools, StaticSource(LISTED), 300, claimer(redis_client)).lease()
    restarted = ProxyPool(pools, StaticSource(["http://127.0.0.3:3128"]), 300,
                          claimer(redis_client))  # the exits moved while it was down
    assert getattr(restarted.lease(), "member", None) == "127.0.0.3:3128"


def test_one_reader_per_interval_across_processes(redis_client: redis.Redis) -> None:
    claim = claimer(redis_client)
    assert claim(300) is True
    assert claim(300) is False  # another process: the source was read a moment ago


def test_without_a_source_nothing_is_leased(backend: tuple[str, redis.Redis | None]) -> None:
    name, client = backend
    proxies = ProxyPool(pool_factory(name, client), StaticSource([]), 300, claimer(client))
    assert proxies.lease() == Empty(None)


@pytest.mark.parametrize(("url", "member"), [
    ("socks5://u:pw@10.0.0.7", "10.0.0.7:1080"), ("socks5h://10.0.0.7:9050", "10.0.0.7:9050"),
    ("http://u:pw@10.0.0.7", "10.0.0.7:80"), ("https://10.0.0.7", "10.0.0.7:443"),
])
def test_a_proxys_member_id_is_its_host_and_port_the_schemes_default_if_unsaid(
        url: str, member: str) -> None:
    assert member_of(url) == member
