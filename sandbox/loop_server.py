"""A small HTTP/1.1 server on one asyncio loop, for sandbox sites that must be fast or hostile.

The threaded stdlib server (``sandbox.server``) spends a thread and a parse per
request; the benchmark sites must serve thousands of requests a second on one
core so that the server is never what a crawler waits for. Here one event loop
serves every connection: keep-alive, pipelined requests answered in order,
replies pre-rendered as bytes. A handler maps an ``Incoming`` request to either

* a ``Reply``: status, headers and body, written at once (its bytes are built
  once and kept, so a page served a thousand times is rendered once), or
* a ``Script``: a coroutine given the connection (``Conn``) that writes what it
  likes when it likes (a drip, a hang, a lying length), for hostile endpoints.
  The connection closes when the script returns.

Every request is counted per client address, per status and per path, and
every accepted connection per listening address (``Tally``), so a test can say
"the second run made 0 requests" or "nothing connected to 127.0.0.2" from the
server's own count. ``GET /_sandbox/stats`` answers that count as JSON (it is
not counted itself), for benchmarks that run the site in another process.

Sockets are bound first (``bind``) so a site can render absolute links with its
own port before it serves. ``LoopServer`` runs the loop in a thread (tests) or
in the foreground until SIGTERM or its lifetime ends (``python -m`` entries).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import socket
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

HTML = "text/html; charset=utf-8"
STATS_PATH = "/_sandbox/stats"
MAX_HEAD_BYTES = 65_536
SCRIPTED = 0  # the status counted for a request a script answered (it writes its own)


@dataclass(frozen=True)
class Incoming:
    """One request as a handler sees it. Header names are lower-case."""

    method: str
    target: str  # as sent: path and query
    headers: Mapping[str, str] = field(default_factory=dict)
    client: str = "127.0.0.1"  # the peer's address

    @cached_property
    def path(self) -> str:
        return urlsplit(self.target).path

    @cached_property
    def query(self) -> dict[str, str]:
        return {k: v[0] for k, v in parse_qs(urlsplit(self.target).query).items()}

    def header(self, name: str) -> str:
        return self.headers.get(name.lower(), "")


@dataclass(frozen=True)
class Reply:
    """A whole answer; its bytes are rendered on first use and kept."""

    status: int
    body: bytes = b""
    content_type: str = HTML
    headers: tuple[tuple[str, str], ...] = ()

    def wire(self, keep_alive: bool, head_only: bool = False) -> bytes:
        """The bytes to send: status line, headers and (unless HEAD) the body."""
        head = self._head_keep if keep_alive else self._head_close
        return head if head_only else head + self.body

    @cached_property
    def _head_keep(self) -> bytes:
        return self._head("keep-alive")

    @cached_property
    def _head_close(self) -> bytes:
        return self._head("close")

    def _head(self, connection: str) -> bytes:
        lines = [f"HTTP/1.1 {self.status} {reason(self.status)}", "Server: sandbox",
                 f"Content-Type: {self.content_type}", f"Content-Length: {len(self.body)}",
                 *(f"{name}: {value}" for name, value in self.headers),
                 f"Connection: {connection}"]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def reason(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


class Conn:
    """The connection a ``Script`` writes to; every wait ends when the client goes away."""

    def __init__(self, transport: asyncio.Transport, lost: asyncio.Event,
                 writable: asyncio.Event) -> None:
        self.transport = transport
        self.lost = lost
        self.writable = writable  # cleared while the client reads slower than we write

    @property
    def closed(self) -> bool:
        return self.lost.is_set() or self.transport.is_closing()

    def write(self, data: bytes) -> None:
        if not self.closed:
            self.transport.write(data)

    async def drain(self) -> None:
        """Wait until the client has read enough of what was written (or is gone): a script
        that writes much (an endless body) must not pile it up in memory."""
        await self.writable.wait()

    async def wait(self, seconds: float) -> bool:
        """Sleep ``seconds`` or until the client goes; True when it is still there."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.lost.wait(), timeout=seconds)
        return not self.closed

    def abort(self) -> None:
        """Close without flushing (a reset mid-body)."""
        self.transport.abort()


Script = Callable[[Conn], Awaitable[None]]
Handler = Callable[[Incoming], "Reply | Script"]


class Tally:
    """What the server saw: requests by client and status, by path; connections by address."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.by_client: dict[str, Counter[int]] = {}
        self.paths: Counter[str] = Counter()
        self.connections: Counter[str] = Counter()

    def request(self, client: str, path: str, status: int) -> None:
        with self._lock:
            self.by_client.setdefault(client, Counter())[status] += 1
            self.paths[path] += 1

    def connection(self, address: str) -> None:
        with self._lock:
            self.connections[address] += 1

    def requests(self, prefix: str = "") -> int:
        """Requests so far whose path starts with ``prefix`` (all of them by default)."""
        with self._lock:
            return sum(n for path, n in self.paths.items() if path.startswith(prefix))

    def statuses(self, client: str | None = None) -> Counter[int]:
        """Requests by status, for one client address or all of them."""
        with self._lock:
            counters = [self.by_client.get(client, Counter())] if client else \
                list(self.by_client.values())
            return sum(counters, Counter())

    def snapshot(self) -> dict[str, Any]:
        """Everything as plain JSON-able data (what ``/_sandbox/stats`` answers)."""
        with self._lock:
            clients = {c: {"requests": sum(s.values()), "by_status": {str(k): v for k, v in
                                                                      sorted(s.items())}}
                       for c, s in self.by_client.items()}
            return {"requests": sum(self.paths.values()), "clients": clients,
                    "connections": dict(self.connections), "paths": len(self.paths)}


@dataclass
class Live:
    """Open connections and running scripts, closed and cancelled when the server stops."""

    connections: set[asyncio.Transport] = field(default_factory=set)
    scripts: set[asyncio.Task[None]] = field(default_factory=set)


class HttpProtocol(asyncio.Protocol):
    """One connection: heads parsed as they come, answered in order."""

    def __init__(self, handler: Handler, tally: Tally, live: Live) -> None:
        self.handler = handler
        self.tally = tally
        self.live = live
        self.buffer = b""
        self.busy = False  # a script owns the connection
        self.client = "?"
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.Event()
        self.writable = asyncio.Event()
        self.writable.set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.live.connections.add(transport)
        self.client = str(transport.get_extra_info("peername", ("?",))[0])
        host, port = transport.get_extra_info("sockname")[:2]
        self.tally.connection(f"{host}:{port}")

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost.set()
        self.writable.set()  # nobody waits to write to a closed connection
        if self.transport is not None:
            self.live.connections.discard(self.transport)
        self.transport = None

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    def data_received(self, data: bytes) -> None:
        if self.busy:
            return  # a script owns the connection: what the client sends now is not read
        self.buffer += data
        self.serve_buffered()

    def serve_buffered(self) -> None:
        """Answer every complete request in the buffer, in order, until a script takes over."""
        while not self.busy and self.transport is not None and not self.transport.is_closing():
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                if len(self.buffer) > MAX_HEAD_BYTES:
                    self.transport.close()
                return
            parsed = parse_head(self.buffer[:end], self.client)
            if parsed is None:
                self.transport.write(Reply(400, b"bad request\n", "text/plain").wire(False))
                self.transport.close()
                return
            incoming, keep, length = parsed
            if len(self.buffer) < end + 4 + length:
                return  # the body is still on its way
            self.buffer = self.buffer[end + 4 + length:]
            self.answer(incoming, keep)

    def answer(self, incoming: Incoming, keep: bool) -> None:
        assert self.transport is not None
        if incoming.path == STATS_PATH:
            body = json.dumps(self.tally.snapshot()).encode()
            self.transport.write(Reply(200, body, "application/json").wire(keep))
        else:
            result = self.handler(incoming)
            if not isinstance(result, Reply):
                self.tally.request(incoming.client, incoming.path, SCRIPTED)
                self.run_script(result)
                return
            self.tally.request(incoming.client, incoming.path, result.status)
            self.transport.write(result.wire(keep, incoming.method == "HEAD"))
        if not keep:
            self.transport.close()

    def run_script(self, script: Script) -> None:
        assert self.transport is not None
        self.busy = True
        conn = Conn(self.transport, self.lost, self.writable)

        async def run() -> None:
            try:
                await script(conn)
            finally:
                if not conn.closed:
                    conn.transport.close()

        task = asyncio.get_running_loop().create_task(run())
        self.live.scripts.add(task)
        task.add_done_callback(self.live.scripts.discard)


def parse_head(head: bytes, client: str) -> tuple[Incoming, bool, int] | None:
    """The request, whether to keep the connection, and the body length; None if malformed."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        return None
    method, target, version = parts
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            return None
        headers[name.strip().lower()] = value.strip()
    connection = headers.get("connection", "").lower()
    keep = connection == "keep-alive" or (version == "HTTP/1.1" and connection != "close")
    length = headers.get("content-length", "0")
    if not length.isdigit():
        return None
    return Incoming(method, target, headers, client), keep, int(length)


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on a loopback address (``port=0``: the kernel picks one)."""
    if not host.startswith("127."):
        raise ValueError(f"sandbox servers listen on 127.0.0.0/8 only, not {host!r}")
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {host}:{port} ({exc}); pick another --port") from exc
    sock.listen(4096)
    sock.setblocking(False)
    return sock


def url_of(sock: socket.socket) -> str:
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}"


class LoopServer:
    """Handlers on bound sockets, served by one event loop, with one ``Tally`` for all."""

    def __init__(self, listeners: Sequence[tuple[Handler, socket.socket]],
                 tally: Tally | None = None) -> None:
        self.listeners = list(listeners)
        self.tally = tally or Tally()
        self.urls = [url_of(sock) for _, sock in self.listeners]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    @property
    def url(self) -> str:
        """The first listener's base URL."""
        return self.urls[0]

    async def serve(self, max_seconds: float | None = None) -> None:
        """Serve until ``stop()`` or ``max_seconds``; then close every connection and script."""
        loop = asyncio.get_running_loop()
        self._loop, self._stop = loop, asyncio.Event()
        live = Live()
        servers = [await loop.create_server(self._factory(handler, live), sock=sock)
                   for handler, sock in self.listeners]
        self._ready.set()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop.wait(), timeout=max_seconds)
        for server in servers:
            server.close()
        for transport in list(live.connections):
            transport.abort()
        for task in list(live.scripts):
            task.cancel()
        await asyncio.gather(*live.scripts, return_exceptions=True)

    def _factory(self, handler: Handler, live: Live) -> Callable[[], HttpProtocol]:
        return lambda: HttpProtocol(handler, self.tally, live)

    def stop(self) -> None:
        """Ask the loop to stop (from any thread); returns at once."""
        if self._loop is not None and self._stop is not None and not self._loop.is_closed():
            with contextlib.suppress(RuntimeError):
                self._loop.call_soon_threadsafe(self._stop.set)

    # -- in a thread, for tests --------------------------------------------------------
    def start_in_thread(self, max_seconds: float = 600.0) -> LoopServer:
        """Serve from a daemon thread (at most ``max_seconds``); returns once listening."""
        self._thread = threading.Thread(target=asyncio.run, args=(self.serve(max_seconds),),
                                        name="loop-server", daemon=True)
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the sandbox loop server did not start within 10 s")
        return self

    def close(self) -> None:
        """Stop the thread started by ``start_in_thread`` and wait for it."""
        self.stop()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def __enter__(self) -> LoopServer:
        return self.start_in_thread()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- in the foreground, for ``python -m`` entries -----------------------------------
    def run(self, max_seconds: float, url_file: Path | None = None) -> None:
        """Serve in this thread until SIGTERM/SIGINT or ``max_seconds``; print the URLs first."""
        async def main() -> None:
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self.stop)
            if url_file is not None:  # first: whoever reads stdout may look for it at once
                url_file.write_text(self.url + "\n")
            print(" ".join(self.urls), flush=True)
            await self.serve(max_seconds)

        try:
            asyncio.run(main())
        finally:
            if url_file is not None:
                url_file.unlink(missing_ok=True)  # a stale URL would point at nothing
