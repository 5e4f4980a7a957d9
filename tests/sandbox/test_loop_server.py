"""The asyncio loop server speaks HTTP/1.1 as crawlers expect and counts what it saw."""

from __future__ import annotations

import http.client
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.loop_server import Conn, Incoming, LoopServer, Reply, Script, bind


def hello(incoming: Incoming) -> Reply | Script:
    if incoming.path == "/drip":
        async def drip(conn: Conn) -> None:
            conn.write(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n")
            for byte in b"abc":
                conn.write(bytes([byte]))
                await conn.wait(0.01)
        return drip
    if incoming.path == "/hang":
        async def hang(conn: Conn) -> None:
            await conn.wait(60)
        return hang
    return Reply(200 if incoming.path != "/missing" else 404,
                 f"{incoming.method} {incoming.target} ua={incoming.header('user-agent')}".encode())


@pytest.fixture
def server() -> Iterator[LoopServer]:
    with LoopServer([(hello, bind())]) as running:
        yield running


def address(url: str) -> tuple[str, int]:
    host, port = url.removeprefix("http://").split(":")
    return host, int(port)


def raw(server: LoopServer, data: bytes, until: bytes = b"", timeout: float = 5) -> bytes:
    """Send ``data`` on a fresh connection; read until ``until`` is seen or the peer closes."""
    with socket.create_connection(address(server.url), timeout=timeout) as sock:
        sock.sendall(data)
        got = b""
        while not (until and until in got):
            chunk = sock.recv(65536)
            if not chunk:
                break
            got += chunk
        return got


def test_keep_alive_serves_many_requests_on_one_connection(server: LoopServer) -> None:
    conn = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=5)
    for path in ("/a", "/b?x=1", "/missing"):
        conn.request("GET", path, headers={"User-Agent": "t"})
        response = conn.getresponse()
        body = response.read()
    conn.close()
    assert (response.status, body) == (404, b"GET /missing ua=t")
    assert server.tally.requests() == 3
    assert sum(server.tally.connections.values()) == 1
    assert server.tally.statuses("127.0.0.1") == {200: 2, 404: 1}


def test_pipelined_requests_are_answered_in_order(server: LoopServer) -> None:
    got = raw(server, b"GET /one HTTP/1.1\r\nHost: x\r\n\r\nGET /two HTTP/1.1\r\nHost: x\r\n"
                      b"Connection: close\r\n\r\n")
    assert got.index(b"GET /one") < got.index(b"GET /two")
    assert got.count(b"HTTP/1.1 200 OK") == 2
    assert b"Connection: close" in got  # the second answer says it, then the server closes


def test_head_gets_headers_without_the_body(server: LoopServer) -> None:
    got = raw(server, b"HEAD /page HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
    assert b"Content-Length: 14" in got
    assert got.endswith(b"\r\n\r\n")


def test_a_malformed_request_gets_400_and_a_closed_connection(server: LoopServer) -> None:
    assert raw(server, b"NONSENSE\r\n\r\n").startswith(b"HTTP/1.1 400 ")


def test_stats_are_served_as_json_and_not_counted(server: LoopServer) -> None:
    raw(server, b"GET /x HTTP/1.0\r\n\r\n")
    got = raw(server, b"GET /_sandbox/stats HTTP/1.0\r\n\r\n")
    stats = json.loads(got.split(b"\r\n\r\n", 1)[1])
    assert stats["requests"] == 1
    assert stats["clients"]["127.0.0.1"]["by_status"] == {"200": 1}


def test_a_script_writes_as_it_likes_and_the_connection_closes_after(server: LoopServer) -> None:
    assert raw(server, b"GET /drip HTTP/1.1\r\nHost: x\r\n\r\n").endswith(b"\r\n\r\nabc")
    assert server.tally.statuses()[0] == 1  # a scripted answer is counted as status 0


def test_stopping_the_server_ends_a_hanging_script() -> None:
    server = LoopServer([(hello, bind())]).start_in_thread()
    with socket.create_connection(address(server.url), timeout=5) as sock:
        sock.sendall(b"GET /hang HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.1)
        server.close()
        assert sock.recv(100) == b""  # closed by the server, not after the script's 60 s


def test_two_addresses_are_counted_apart() -> None:
    with LoopServer([(hello, bind("127.0.0.1")), (hello, bind("127.0.0.2"))]) as server:
        for url in server.urls:
            with socket.create_connection(address(url), timeout=5) as sock:
                sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
                sock.recv(100)
        assert sorted(a.split(":")[0] for a in server.tally.connections) == ["127.0.0.1",
                                                                            "127.0.0.2"]


def test_only_loopback_addresses_can_be_bound() -> None:
    with pytest.raises(ValueError, match=r"127\.0\.0\.0/8"):
        bind("0.0.0.0")


@pytest.mark.parametrize("module", ["sandbox.polite", "sandbox.generic", "sandbox.hostile"])
def test_each_site_serves_from_its_entry_point_until_sigterm(module: str, tmp_path: Path) -> None:
    url_file = tmp_path / "url"
    proc = subprocess.Popen([sys.executable, "-m", module, "--max-seconds", "60",
                             "--url-file", str(url_file)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[0]
        assert url_file.read_text().strip() == url
        with socket.create_connection(address(url), timeout=5) as sock:
            sock.sendall(b"GET /_sandbox/stats HTTP/1.0\r\n\r\n")
            assert sock.recv(100).startswith(b"HTTP/1.1 200 OK")
    finally:
        proc.terminate()
        assert proc.wait(timeout=10) == 0
    assert not url_file.exists()  # a stale URL would point at nothing


def test_a_site_stops_by_itself_when_its_lifetime_ends() -> None:
    proc = subprocess.run([sys.executable, "-m", "sandbox.polite", "--max-seconds", "0.5"],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.startswith("http://127.0.0.1:")
