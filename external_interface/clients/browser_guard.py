"""The SSRF guard in the browser: a forward proxy on loopback that every connection of
every page goes through, checked as the ``http`` client checks its own.

Why a proxy and not Playwright's request routing: a route handler is never called for
a redirect's next hop (Playwright says so, and Chromium follows a fulfilled redirect
unrouted too), so ``<img src=/r>`` answered by ``302 Location: http://127.0.0.1:6379/``
would reach Redis. Chromium, launched with this proxy and ``<-loopback>`` taken off its
bypass list, opens every connection through it (documents, scripts, images, frames,
``fetch()``, WebSockets, each redirect hop, prefetches): the proxy resolves the host
once, keeps only the addresses the guard allows and connects to one of them, so a DNS
answer that changes after the check never matters. A refused connection gets ``403``
and is counted (``refused``).

Two request forms, as any forward proxy: ``CONNECT host:port`` (https, WebSockets over
TLS) is tunnelled; an absolute-form request (plain http) is sent on in origin form with
``Connection: close``, so the browser never reuses one proxied connection for another
host. A provider's ``http://`` proxy (``upstream``) is chained: the guard checks the
host the URL names (resolved here, best effort, as for the other clients through an
http proxy) and the upstream proxy carries the request.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from urllib.parse import urlsplit

from exceptions import UnsafeURL
from external_interface.clients.http_transport import Proxy
from external_interface.url_guard import UrlGuard

REFUSED_HEADER = "X-Crawlchain-Guard-Refused"  # on the proxy's own 403: not the site's
HEAD_LIMIT = 64 * 1024  # bytes of a request head the proxy reads
_HOP_HEADERS = frozenset({"proxy-connection", "proxy-authorization", "connection", "keep-alive"})


class GuardProxy:
    """One listener on 127.0.0.1; ``url`` is what a browser or a context is given."""

    def __init__(self, guard: UrlGuard, upstream: Proxy | None = None) -> None:
        self.guard = guard
        self.upstream = upstream
        self.refused = 0
        self.port = 0
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> GuardProxy:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0,
                                                  limit=HEAD_LIMIT)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await self._one(reader, writer)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    async def _one(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        first, *lines = head.decode("latin-1").split("\r\n")
        method, target, version = first.split(" ", 2)
        tunnel = method.upper() == "CONNECT"
        if tunnel:
            host, _, port_text = target.rpartition(":")
            host, port, path = host.strip("[]"), int(port_text), ""
        else:
            parts = urlsplit(target)
            host, port = parts.hostname or "", parts.port or 80
            path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        try:
            up_reader, up_writer = await self._connect(host, port, target)
        except UnsafeURL:
            self.refused += 1
            writer.write(b"HTTP/1.1 403 Forbidden\r\n" + REFUSED_HEADER.encode() +
                         b": 1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            await writer.drain()
            return
        except OSError:
            writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
                         b"Connection: close\r\n\r\n")
            await writer.drain()
            return
        try:
            if tunnel and not await self._tunnel_upstream(target, up_reader, up_writer):
                writer.write(b"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n\r\n")
                return
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                sent = [h for h in lines if h and h.split(":", 1)[0].strip().lower()
                        not in _HOP_HEADERS]
                line = target if self.upstream is not None else path
                extra = [f"{k}: {v}" for k, v in (self.upstream.headers.items()
                                                  if self.upstream else ())]
                up_writer.write("\r\n".join([f"{method} {line} {version}", *sent, *extra,
                                             "Connection: close", "", ""]).encode("latin-1"))
            pipes = [asyncio.ensure_future(_pipe(reader, up_writer)),
                     asyncio.ensure_future(_pipe(up_reader, writer))]
            _, pending = await asyncio.wait(pipes, return_when=asyncio.FIRST_COMPLETED)
            for left in pending:  # one side closed: the exchange is over
                left.cancel()
        finally:
            up_writer.close()

    async def _connect(self, host: str, port: int, target: str
                       ) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to a checked address of ``host`` (or to the upstream proxy, the
        host checked as the URL names it); ``UnsafeURL`` when the guard refuses it."""
        loop = asyncio.get_running_loop()
        if self.upstream is not None:
            scheme = "https" if port == 443 else "http"
            await loop.run_in_executor(None, lambda: self.guard.check_url(
                f"{scheme}://{_netloc(host, port)}/", resolve=True))
            return await asyncio.open_connection(self.upstream.host, self.upstream.port)
        try:
            found = await loop.run_in_executor(None, self.guard.addresses, host, port)
        except socket.gaierror as exc:
            raise OSError(str(exc)) from None
        return await asyncio.open_connection(found[0][1][0], port)

    async def _tunnel_upstream(self, target: str, reader: asyncio.StreamReader,
                               writer: asyncio.StreamWriter) -> bool:
        """A CONNECT through the upstream proxy: True once it says 200 (none: True)."""
        if self.upstream is None:
            return True
        extra = "".join(f"{k}: {v}\r\n" for k, v in self.upstream.headers.items())
        writer.write(f"CONNECT {target} HTTP/1.1\r\nHost: {target}\r\n{extra}\r\n"
                     .encode("latin-1"))
        answer = await reader.readuntil(b"\r\n\r\n")
        return answer.split(b" ", 2)[1:2] == [b"200"]


def _netloc(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until either side closes."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        with contextlib.suppress(OSError, RuntimeError):
            writer.write_eof()
