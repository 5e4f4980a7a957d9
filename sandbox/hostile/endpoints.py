"""Hostile answers, each a ``Reply`` or a ``Script`` for the loop server.

Every script is bounded: it stops when the client goes away or after ``hold_s``,
and an endless body stops at ``ENDLESS_CAP`` bytes, writing only as fast as the
client reads (``Conn.drain``), so a misbehaving endpoint never costs the server
memory or outlives a test. Bombs are built once per size and kept.
"""

from __future__ import annotations

import functools
import gzip
import socket
import struct
import zlib

import brotli  # no stubs; a dependency already

from sandbox.loop_server import Conn, Reply, Script

MB = 1024 * 1024
ENDLESS_CAP = 256 * MB


def head(status: str = "200 OK", **headers: str) -> bytes:
    """A response head as written, with whatever headers (underscores become dashes)."""
    lines = [f"HTTP/1.1 {status}", *(f"{k.replace('_', '-')}: {v}" for k, v in headers.items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def hang(hold_s: float) -> Script:
    """Accept, read the request, never answer."""
    async def script(conn: Conn) -> None:
        await conn.wait(hold_s)
    return script


def drip(prefix: bytes, interval_s: float, hold_s: float) -> Script:
    """Write ``prefix``, then one byte every ``interval_s``: each read succeeds, none ends."""
    async def script(conn: Conn) -> None:
        conn.write(prefix)
        for _ in range(int(hold_s / interval_s)):
            if not await conn.wait(interval_s):
                return
            conn.write(b"x")
    return script


def endless(prefix: bytes, chunked: bool) -> Script:
    """Write ``prefix``, then 64 KB pieces until the client stops reading (256 MB at most)."""
    piece = bytes(64 * 1024)
    framed = b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece

    async def script(conn: Conn) -> None:
        conn.write(prefix)
        for _ in range(ENDLESS_CAP // len(piece)):
            if conn.closed:
                return
            conn.write(framed)
            await conn.drain()
    return script


def short_then(body: bytes, then: bytes) -> Reply:
    """``Content-Length`` covers ``body`` only; ``then`` follows it on the same connection
    (say, a forged second response a careless client would take for its next answer)."""
    return Reply(200, body + then, headers=(("X-Length-Lie", "short"),))


def long_then(sent: bytes, claimed: int, hold_s: float) -> Script:
    """Claim ``claimed`` bytes, send ``sent``, then hold the connection (``hold_s``) or,
    with ``hold_s`` 0, close it."""
    async def script(conn: Conn) -> None:
        conn.write(head(Content_Type="text/html", Content_Length=str(claimed)) + sent)
        if hold_s:
            await conn.wait(hold_s)
    return script


def reset_mid_body() -> Script:
    """Send half a body, then reset the connection (RST, not FIN)."""
    async def script(conn: Conn) -> None:
        conn.write(head(Content_Type="text/html", Content_Length="100000") + b"<html>" * 100)
        sock = conn.transport.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        await conn.wait(0.05)
        conn.abort()
    return script


@functools.cache
def zeros(encoding: str, mb: int) -> bytes:
    """``mb`` MB of zero bytes compressed in ``encoding``: gzip, deflate, br, or gzip+gzip."""
    if encoding == "gzip, gzip":
        return gzip.compress(zeros("gzip", mb), mtime=0)
    if encoding == "br":
        compressor = brotli.Compressor(quality=5)
        packed = [compressor.process(bytes(MB)) for _ in range(mb)] + [compressor.finish()]
        return b"".join(bytes(piece) for piece in packed)
    wbits = {"gzip": 31, "deflate": 15}[encoding]
    packer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return b"".join(packer.compress(bytes(MB)) for _ in range(mb)) + packer.flush()


def bomb(encoding: str, mb: int) -> Reply:
    """A small body that decodes to ``mb`` MB of zeros, declared as HTML."""
    return Reply(200, zeros(encoding, mb), headers=(("Content-Encoding", encoding),))


def redirect(location: str, status: int = 302) -> Reply:
    return Reply(status, b"", headers=(("Location", location),))
