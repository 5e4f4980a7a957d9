"""A loopback TCP server that writes exactly the bytes a broken or hostile server would.

``http.server`` cannot lie about Content-Length, break chunked framing, reset a
connection mid-body or go silent after the headers; these handlers can. Every
loop in them is bounded, and a handler returns True to serve another request on
the same (kept-alive) connection.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from config import FetchSettings
from exceptions import CrawlError
from external_interface.clients.bounds import BoundedClient
from external_interface.clients.factory import build_client
from external_interface.http import Request
from external_interface.url_guard import UrlGuard

MB = 1024 * 1024
Handler = Callable[[socket.socket, bytes], bool]


class RawServer:
    """A loopback TCP server answering each request path with a scripted byte sequence."""

    def __init__(self, routes: dict[str, Handler] | None = None,
                 raw: Handler | None = None) -> None:
        """``raw``: answer every connection with this, without reading a request first
        (for a TLS peer, whose ClientHello is no HTTP request)."""
        self.routes = routes or {}
        self.raw = raw
        self.hits: Counter[str] = Counter()
        self.heads: list[bytes] = []
        self.sent: Counter[str] = Counter()
        self.finished: dict[str, threading.Event] = {}
        self.connections = 0  # accepted so far: a kept-alive connection counts once
        self.stop = threading.Event()
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.1)
        self.port = self.sock.getsockname()[1]
        self.base = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(5)
            if self.raw is not None:
                with contextlib.suppress(OSError):
                    self.raw(conn, b"")
                return
            for _ in range(3):  # at most three requests on one kept-alive connection
                head = read_head(conn)
                if head is None:
                    return
                path = head.split(b" ")[1].decode("latin-1")
                self.hits[path] += 1
                self.heads.append(head)
                done = self.finished.setdefault(path, threading.Event())
                try:
                    keep = self.routes.get(path.split("?")[0], proxy_refusal)(conn, head)
                except OSError:
                    keep = False
                done.set()
                if not keep:
                    return

    def send(self, conn: socket.socket, path: str, data: bytes) -> None:
        conn.sendall(data)
        self.sent[path] += len(data)

    def close(self) -> None:
        self.stop.set()
        self.sock.close()


def read_head(conn: socket.socket) -> bytes | None:
    data = b""
    while b"\r\n\r\n" not in data and len(data) < 65536:
        try:
            chunk = conn.recv(4096)
        except OSError:
            return None
        if not chunk:
            return None
        data += chunk
    return data


def proxy_refusal(conn: socket.socket, head: bytes) -> bool:
    """Any path no route knows (a proxy request's absolute URL, CONNECT): a 407."""
    conn.sendall(response("407 Proxy Authentication Required", Content_Length="0"))
    return False


def response(status: str, body: bytes = b"", **headers: str) -> bytes:
    lines = [f"HTTP/1.1 {status}"] + [f"{k.replace('_', '-')}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def compressed(encoding: str, size: int = 64 * MB) -> bytes:
    """``size`` zero bytes compressed in ``encoding`` (a bomb), built in 1 MB steps."""
    if encoding == "br":
        brotli = pytest.importorskip("brotli")
        compressor = brotli.Compressor(quality=5)
        chunks: list[bytes] = [compressor.process(bytes(MB)) for _ in range(size // MB)]
        return b"".join(chunks) + bytes(compressor.finish())
    wbits = {"gzip": 31, "deflate": 15, "deflate-raw": -15}[encoding]
    zc = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return b"".join(zc.compress(bytes(MB)) for _ in range(size // MB)) + zc.flush()


# -- handler builders ------------------------------------------------------------
def fixed(data: bytes, keep: bool = False) -> Handler:
    """Write ``data`` and stop (or, with ``keep``, wait for the next request)."""
    def handler(conn: socket.socket, head: bytes) -> bool:
        conn.sendall(data)
        return keep
    return handler


def then_silent(server: RawServer, data: bytes = b"") -> Handler:
    """Write ``data``, then hold the connection open and say nothing (10 s at most)."""
    def handler(conn: socket.socket, head: bytes) -> bool:
        conn.sendall(data)
        server.stop.wait(10)
        return False
    return handler


def drip(prefix: bytes, step_s: float) -> Handler:
    """Write ``prefix``, then one byte every ``step_s`` for 10 s at most."""
    def handler(conn: socket.socket, head: bytes) -> bool:
        conn.sendall(prefix)
        for _ in range(int(10 / step_s)):
            conn.sendall(b"x")
            time.sleep(step_s)
        return False
    return handler


def endless(server: RawServer, path: str, headers: bytes, piece: bytes) -> Handler:
    """Write ``headers``, then ``piece`` again and again (256 MB at most), counting bytes."""
    def handler(conn: socket.socket, head: bytes) -> bool:
        conn.sendall(headers)
        for _ in range(min(256 * MB // len(piece), 1_000_000)):
            server.send(conn, path, piece)
        return False
    return handler


def redirect(location: str, keep: bool = False) -> Handler:
    """A 302 to ``location``, empty body."""
    return fixed(response("302 Found", Location=location, Content_Length="0"), keep)


# -- the clients the fetch tests run against, and their deadline check ----------------
AnyClient = BoundedClient[Any]  # either client, as the tests hold one
DEADLINE_S = 1.5
WAITED_S = 0.5  # the deadline of a test that waits it out: it only has to end by then


def client(name: str, settings: FetchSettings | None = None,
           guard: UrlGuard | None = None) -> AnyClient:
    """The fetch client ``name`` (``http``, ``impersonate``) with ``settings``."""
    built = build_client(name, settings or FetchSettings(), guard)
    assert isinstance(built, BoundedClient)
    return built


def hostile_fetcher(cap: int, name: str = "http", deadline_s: float = DEADLINE_S,
                    timeouts_s: tuple[float, float] = (0.5, 5)) -> AnyClient:
    """A client with a short deadline and a ``cap``-byte body limit; ``timeouts_s``, the
    connect and read timeouts."""
    connect, read = timeouts_s
    return client(name, FetchSettings(deadline_s=deadline_s, connect_timeout_s=connect,
                                      read_timeout_s=read, max_body_bytes=cap, max_redirects=5))


def fetch_fails(fetcher: AnyClient, request: Request,
                error: type[CrawlError]) -> CrawlError:
    """Fetch, expecting ``error``, and prove the deadline held (with scheduling slack)."""
    started = time.monotonic()
    with pytest.raises(error) as caught:
        fetcher.fetch(request)
    assert time.monotonic() - started < fetcher.settings.deadline_s + 1.0
    return caught.value
