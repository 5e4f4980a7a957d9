"""A static file server that answers every request after a fixed delay (default 0.25 s).

    python -m bench.properties.latency_server --root DIR --port 28081 [--latency 0.25]

The latency-bound test of *Learning Scrapy* ch. 11: with every response 0.25 s
away, a crawler at concurrency C can at best fetch C / 0.25 pages a second, and
its efficiency is how close it gets. The delay is a timer (``loop.call_later``),
not a sleeping thread, so thousands of connections wait at once for almost no
CPU and the server is never the bottleneck. HTTP/1.1 keep-alive, GET and HEAD,
bound to 127.0.0.1 only; it exits by itself after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence
from email.utils import formatdate
from pathlib import Path

MAX_HEADER_BYTES = 65_536
CACHE_FILES = 200_000
TYPES = {".html": b"text/html; charset=utf-8", ".css": b"text/css", ".jpg": b"image/jpeg"}


class Files:
    """Files under ``root`` by URL path, read once and kept (the site fits in memory)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()
        self.cache: dict[str, bytes] = {}

    def get(self, path: str) -> bytes | None:
        body = self.cache.get(path)
        if body is None:
            target = (self.root / path.lstrip("/")).resolve()
            if not target.is_relative_to(self.root) or not target.is_file():
                return None
            body = target.read_bytes()
            if len(self.cache) < CACHE_FILES:
                self.cache[path] = body
        return body


class DelayedHTTP(asyncio.Protocol):
    """One connection: requests answered in order, each ``latency`` seconds after it came."""

    def __init__(self, files: Files, latency: float) -> None:
        self.files = files
        self.latency = latency
        self.buffer = b""
        self.busy = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > MAX_HEADER_BYTES and self.transport is not None:
            self.transport.close()
            return
        self.next_request()

    def next_request(self) -> None:
        """Take the next complete request head, if any, and schedule its answer."""
        end = self.buffer.find(b"\r\n\r\n")
        if self.busy or self.transport is None or end < 0:
            return
        head, self.buffer = self.buffer[:end], self.buffer[end + 4:]
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3:
            self.transport.close()
            return
        method, target, version = parts
        headers = {k.strip().lower(): v.strip().lower()
                   for k, _, v in (line.partition(b":") for line in lines[1:])}
        connection = headers.get(b"connection", b"")
        keep = connection == b"keep-alive" or (version == b"HTTP/1.1" and connection != b"close")
        self.busy = True
        asyncio.get_running_loop().call_later(self.latency, self.respond, method, target, keep)

    def respond(self, method: bytes, target: bytes, keep: bool) -> None:
        self.busy = False
        if self.transport is None:
            return
        path = target.split(b"?", 1)[0].decode("latin-1")
        body = self.files.get(path) if method in (b"GET", b"HEAD") else None
        status, ctype = b"200 OK", TYPES.get(Path(path).suffix, b"application/octet-stream")
        if body is None:
            status, ctype, body = b"404 Not Found", b"text/plain", b"not found\n"
        self.transport.write(b"".join([
            b"HTTP/1.1 ", status, b"\r\nServer: latency-server\r\nDate: ",
            formatdate(usegmt=True).encode(), b"\r\nContent-Type: ", ctype,
            b"\r\nContent-Length: ", str(len(body)).encode(),
            b"\r\nConnection: ", b"keep-alive" if keep else b"close", b"\r\n\r\n",
            b"" if method == b"HEAD" else body]))
        if keep:
            self.next_request()
        else:
            self.transport.close()


async def serve(root: Path, port: int, latency: float, max_seconds: float) -> None:
    """Serve until SIGTERM/SIGINT or ``max_seconds``, whichever comes first."""
    loop = asyncio.get_running_loop()
    files = Files(root)
    server = await loop.create_server(lambda: DelayedHTTP(files, latency), "127.0.0.1", port,
                                      backlog=4096, reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print(f"latency server on http://127.0.0.1:{port}/ ({latency}s)", flush=True)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=max_seconds)
    server.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.properties.latency_server",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--root", type=Path, required=True, help="directory to serve")
    parser.add_argument("--port", type=int, default=28081)
    parser.add_argument("--latency", type=float, default=0.25, help="seconds per response")
    parser.add_argument("--max-seconds", type=float, default=3 * 3600,
                        help="exit by itself after this long")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.root, args.port, args.latency, args.max_seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
