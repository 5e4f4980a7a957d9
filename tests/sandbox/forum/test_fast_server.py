"""The benchmark's fast server answers what the sandbox server answers, byte for byte."""

from __future__ import annotations

import http.client
import socket
import subprocess
import sys
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from sandbox.forum.expected import expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import ForumWorld
from sandbox.server import SandboxServer, Site
from sandbox.world import World

Reply = tuple[int, str | None, str | None, bytes]


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "sandbox.forum.fast_server", "--port", "0",
                             *args], stdout=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def fast() -> Iterator[str]:
    proc = start("--shape", "small", "--seed", "7", "--max-seconds", "120")
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def sandbox() -> Iterator[str]:
    running = SandboxServer(Site(World(), forum=ForumSite(ForumWorld.build(seed=7))))
    running.start_in_thread()
    yield running.base_url
    running.shutdown()
    running.server_close()


def fetch_all(base_url: str, urls: list[str]) -> list[Reply]:
    """Each URL on one keep-alive connection: status, type, Date and body."""
    parts = urlsplit(base_url)
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    out = []
    for url in urls:
        conn.request("GET", url)
        r = conn.getresponse()
        out.append((r.status, r.getheader("Content-Type"), r.getheader("Date"), r.read()))
    conn.close()
    return out


def test_a_sample_of_urls_answers_the_same_bytes_as_the_sandbox_server(
        fast: str, sandbox: str) -> None:
    truth = expected(ForumWorld.build(seed=7))
    urls = sorted(truth.urls)[::7] + sorted(truth.failures) + [
        "/forum/nowhere", "/forum/b/general?page=9", "/forum/b/help?page=1"]
    assert fetch_all(fast, urls) == fetch_all(sandbox, urls)


def test_pipelined_requests_are_answered_in_order_and_close_is_honoured(fast: str) -> None:
    parts = urlsplit(fast)
    with socket.create_connection((parts.hostname or "", parts.port or 0), timeout=10) as sock:
        sock.sendall(b"GET /forum/api/users/1 HTTP/1.1\r\nHost: x\r\n\r\n"
                     b"GET /forum/api/users/2 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
    assert data.count(b"HTTP/1.1 200 OK") == 2
    assert data.index(b'"id": 1,') < data.index(b'"id": 2,')
    assert b"Connection: close" in data


def test_it_stops_by_itself_after_its_lifetime() -> None:
    proc = start("--max-seconds", "0.2")
    assert proc.wait(timeout=60) == 0
