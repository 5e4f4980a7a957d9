"""Random hostile responses from a seed: a status line, headers and a body that lie,
break, compress, stack codings, redirect anywhere, reset or fall silent.

    with CaseServer() as server:
        fetcher.fetch(Request(server.url(seed)))     # case ``seed``, the same bytes each time

A case is drawn from ``random.Random(seed)`` by the server when the request for it
arrives, so a failing seed replays exactly. Every size is bounded (a body is at most
256 KiB on the wire, a head at most 100 KiB), and a silent case stays silent for at
most ``SILENT_S``.
"""

from __future__ import annotations

import gzip
import random
import socket
import struct
import time
import zlib
from collections.abc import Callable
from types import TracebackType
from typing import Self

import brotli

from tests.external_interface.clients.raw_server import RawServer

SILENT_S = 1.0  # past the fetch's deadline in the tests
PAGE = b"<html><body><p>a page</p></body></html>"
STATUSES = [200, 200, 200, 201, 204, 206, 301, 302, 303, 307, 308, 304, 100, 101, 103, 400,
            401, 403, 404, 407, 410, 429, 500, 503, 599, 999, 0]
TYPES = ["text/html", "text/html; charset=utf-8", "application/json", "image/png",
         "text/html; charset=x-nope", "\x00garbage/\xff", "", "application/octet-stream"]
CODINGS = ["gzip", "deflate", "br", "x-gzip", "identity", "zstd", "compress", "garbage", ""]


def encode(body: bytes, coding: str) -> bytes:
    if coding in ("gzip", "x-gzip"):
        return gzip.compress(body)
    if coding == "deflate":
        return zlib.compress(body)
    if coding == "br":
        result: bytes = brotli.compress(body)
        return result
    return body


class Case:
    """The bytes of one hostile response, and how its connection ends."""

    def __init__(self, seed: int, port: int) -> None:
        self.rng = rng = random.Random(seed)
        self.port = port
        self.head = self._status() + b"".join(self._header() for _ in range(rng.randrange(12)))
        self.body = self._body()
        self.ending = rng.choice(["close"] * 30 + ["reset"] * 5 + ["keep"] * 4 + ["silent"])

    def _status(self) -> bytes:
        rng = self.rng
        status = rng.choice(STATUSES)
        return rng.choice([
            b"HTTP/1.1 %d Whatever\r\n" % status, b"HTTP/1.0 %d OK\r\n" % status,
            b"HTTP/1.1 %d\r\n" % status, b"HTTP/2 200\r\n", b"ICY 200 OK\r\n", b"",
            bytes(rng.randrange(256) for _ in range(rng.randrange(40))) + b"\r\n",
            b"HTTP/1.1 200 OK\n", b"HTTP/1.1 2OO OK\r\n",
        ])

    def _header(self) -> bytes:
        rng = self.rng
        choices: list[tuple[str, Callable[[], str]]] = [
            ("Content-Type", lambda: rng.choice(TYPES)),
            ("Content-Length", lambda: rng.choice(["0", "5", "100", "-1", "abc", "99999999999",
                                                   str(rng.randrange(5000)), "1, 2"])),
            ("Transfer-Encoding", lambda: rng.choice(["chunked", "gzip, chunked", "garbage"])),
            ("Content-Encoding", lambda: ", ".join(rng.choice(CODINGS)
                                                   for _ in range(rng.randrange(12)))),
            ("Location", self._location),
            ("Retry-After", lambda: rng.choice(["5", "-3", "soon",
                                                "Wed, 21 Oct 2015 07:28:00 GMT"])),
            ("Set-Cookie", lambda: "sid=" + "x" * rng.randrange(100)),
            ("Connection", lambda: rng.choice(["close", "keep-alive", "Upgrade"])),
            (rng.choice(["X-\x00", "Bad Name", "\xff\xfe", ":", ""]), lambda: "v"),
            ("X-Long", lambda: "y" * rng.choice([10, 70_000])),
        ]
        name, value = rng.choice(choices)
        line = f"{name}: {value()}".encode("latin-1", "replace")
        fold = b"\r\n\t continued" if rng.random() < 0.05 else b""
        return line + fold + rng.choice([b"\r\n"] * 9 + [b"\n", b"\r"])

    def _location(self) -> str:
        rng = self.rng
        return rng.choice([
            f"/case/{rng.randrange(10**6)}", f"http://127.0.0.1:{self.port}/case/{rng.randrange(9)}",
            "ftp://127.0.0.1/x", "http://[::1", "//evil.example/x", "http://127.0.0.1:99999/",
            "".join(chr(rng.randrange(32, 256)) for _ in range(rng.randrange(30))), "",
            "javascript:alert(1)", "http://user:pw@127.0.0.1:1/",
        ])

    def _body(self) -> bytes:
        rng = self.rng
        body = rng.choice([PAGE, b"", bytes(rng.randrange(256) for _ in range(rng.randrange(2000))),
                           bytes(1 << 20), PAGE * 100])
        for coding in rng.sample(CODINGS, rng.randrange(4)):
            body = encode(body, coding)
        body = body[:256 * 1024]
        if rng.random() < 0.3:  # chunked framing, honest or not
            pieces = [body[i:i + 997] for i in range(0, len(body), 997)]
            body = b"".join(rng.choice([b"%x" % len(p), b"zz", b"ffffffff", b"%x;ext" % len(p)])
                            + b"\r\n" + p + b"\r\n" for p in pieces)
            body += rng.choice([b"0\r\n\r\n", b"", b"0\r\nTrailer: x\r\n\r\n"])
        if rng.random() < 0.2:
            body = body[:rng.randrange(len(body) + 1)]
        return body

    def write(self, conn: socket.socket) -> bool:
        """Send the case; True when the connection should serve another request."""
        conn.sendall(self.head + self.rng.choice([b"\r\n", b"", b"\n"]) + self.body)
        if self.ending == "reset":
            conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif self.ending == "silent":
            time.sleep(SILENT_S)
        return self.ending == "keep"


class _Cases(dict[str, object]):
    """Routes that answer every ``/case/N`` path with case N (RawServer looks paths up)."""

    def __init__(self, port: int) -> None:
        super().__init__()
        self.port = port

    def get(self, path: str, default: object = None) -> object:
        _, _, seed = path.partition("/case/")
        if not seed.isdigit():
            return default
        return lambda conn, head: Case(int(seed), self.port).write(conn)


class CaseServer:
    """A ``RawServer`` answering ``/case/N`` with case N."""

    def __init__(self) -> None:
        self.raw = RawServer()
        self.raw.routes = _Cases(self.raw.port)  # type: ignore[assignment]

    def url(self, seed: int) -> str:
        return f"{self.raw.base}/case/{seed}"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.raw.close()
