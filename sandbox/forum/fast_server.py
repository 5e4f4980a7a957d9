"""The forum alone on a fast server, for benchmarks: the crawlers are measured, not it.

    python -m sandbox.forum.fast_server --port 28090 --shape large --seed 7 [--max-seconds S]

One asyncio loop, HTTP/1.1 keep-alive (pipelined requests answered in order), every
page of a minimal crawl rendered once at start and served from memory as whole
responses; any other URL is answered by the same ``ForumSite`` and kept. The bytes
(status, ``Content-Type``, ``Date``, body) are those ``sandbox.server`` sends for the
same URL. ``POST /forum/__admin/mutate`` works too (the cache starts again).

Bound to 127.0.0.1 only; prints its base URL once listening (and writes it to
``--url-file``); exits on SIGTERM/SIGINT or after ``--max-seconds``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
import time
from collections.abc import Sequence
from http import HTTPStatus
from pathlib import Path
from typing import NamedTuple
from urllib.parse import parse_qs, urlsplit

from sandbox.calls import Answer, Call
from sandbox.forum.expected import expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import SHAPES, ForumWorld

MAX_HEAD_BYTES = 65_536
MAX_BODY_BYTES = 65_536
MAX_CACHED = 500_000


class Rendered(NamedTuple):
    """One response: head (without ``Connection`` and the blank line) and body, and both
    joined for keep-alive, the usual case, so it goes out as one ready buffer."""

    head: bytes
    body: bytes
    keep_alive: bytes

    def closing(self) -> bytes:
        return self.head + b"Connection: close\r\n\r\n" + self.body


class Responses:
    """Rendered responses by method and request target, each rendered once."""

    def __init__(self, site: ForumSite) -> None:
        self.site = site
        self.cache: dict[tuple[bytes, bytes], Rendered] = {}

    def warm(self) -> int:
        """Render every URL of a minimal crawl; the count rendered."""
        for url in expected(self.site.world).urls:
            self.get(b"GET", url.encode())
        return len(self.cache)

    def get(self, method: bytes, target: bytes, body: bytes = b"") -> Rendered:
        key = (method, target)
        response = self.cache.get(key)
        if response is None:
            response = render(self.site.answer(call_of(method, target, body)))
            if method == b"GET" and len(self.cache) < MAX_CACHED:
                self.cache[key] = response
            elif method == b"POST":
                self.cache.clear()  # the only POST moves the world on
        return response


def call_of(method: bytes, target: bytes, body: bytes) -> Call:
    """The ``Call`` the sandbox server's handler would build for this request."""
    parts = urlsplit(target.decode("latin-1"))
    return Call(path=parts.path, query={k: v[0] for k, v in parse_qs(parts.query).items()},
                method=method.decode("latin-1"),
                form={k: v[0] for k, v in parse_qs(body.decode("utf-8", "replace")).items()})


def render(answer: Answer) -> Rendered:
    reason = HTTPStatus(answer.status).phrase
    lines = [f"HTTP/1.1 {answer.status} {reason}", "Server: forum-fast-server",
             *(f"{k}: {v}" for k, v in answer.headers),
             f"Content-Type: {answer.content_type}", f"Content-Length: {len(answer.body)}"]
    head = ("\r\n".join(lines) + "\r\n").encode("latin-1")
    return Rendered(head, answer.body, head + b"Connection: keep-alive\r\n\r\n" + answer.body)


class Connection(asyncio.Protocol):
    """One client connection: requests answered in the order they came."""

    def __init__(self, responses: Responses) -> None:
        self.responses = responses
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        out: list[bytes] = []
        keep = True
        while keep:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                break
            head = self.buffer[:end]
            parts = head.split(b"\r\n", 1)[0].split(b" ")
            lower = head.lower()
            length = _content_length(lower)
            if len(parts) != 3 or length is None:
                self._close(out)
                return
            if len(self.buffer) < end + 4 + length:
                break  # the body is still on its way
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            method, target, version = parts
            keep = (b"\r\nconnection: close" not in lower
                    and (version == b"HTTP/1.1" or b"\r\nconnection: keep-alive" in lower))
            rendered = self.responses.get(method, target, body)
            out.append(rendered.keep_alive if keep else rendered.closing())
        if self.transport is None:
            return
        if out:
            self.transport.write(b"".join(out))
        if not keep or len(self.buffer) > MAX_HEAD_BYTES + MAX_BODY_BYTES:
            self.transport.close()

    def _close(self, out: list[bytes]) -> None:
        if self.transport is not None:
            self.transport.write(b"".join(out))
            self.transport.close()


def _content_length(lower_head: bytes) -> int | None:
    """The request's body length (0 when absent); None when it is not a sane number."""
    at = lower_head.find(b"\r\ncontent-length:")
    if at < 0:
        return 0
    raw = lower_head[at + 17 :].split(b"\r\n", 1)[0].strip()
    return int(raw) if raw.isdigit() and int(raw) <= MAX_BODY_BYTES else None


async def serve(site: ForumSite, port: int, max_seconds: float, url_file: Path | None) -> None:
    """Serve until SIGTERM/SIGINT or ``max_seconds``, whichever comes first."""
    loop = asyncio.get_running_loop()
    responses = Responses(site)
    started = time.perf_counter()
    rendered = responses.warm()
    server = await loop.create_server(lambda: Connection(responses), "127.0.0.1", port,
                                      backlog=4096, reuse_address=True)
    stop = asyncio.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    bound = server.sockets[0].getsockname()[1]
    base = f"http://127.0.0.1:{bound}"
    if url_file is not None:
        url_file.write_text(base + "\n")
    print(base, flush=True)
    print(f"{rendered} pages rendered in {time.perf_counter() - started:.1f}s", file=sys.stderr,
          flush=True)
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stop.wait(), timeout=max_seconds)
    server.close()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sandbox.forum.fast_server",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=28090, help="0 picks a free port")
    parser.add_argument("--shape", choices=sorted(SHAPES), default="small")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-seconds", type=float, default=3600,
                        help="exit by itself after this long")
    parser.add_argument("--url-file", type=Path, help="write the base URL here once listening")
    args = parser.parse_args(argv)
    site = ForumSite(ForumWorld.build(args.seed, SHAPES[args.shape]))
    asyncio.run(serve(site, args.port, args.max_seconds, args.url_file))
    return 0


if __name__ == "__main__":
    sys.exit(main())
