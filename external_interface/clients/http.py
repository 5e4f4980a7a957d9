"""The ``http`` client, the default: HTTP/1.1 on ``http_transport``'s kept-alive
connections.

It keeps every bound itself: each socket obeys the fetch's wall-clock ``Deadline``
(connect, TLS handshake, a proxy's CONNECT or SOCKS handshake, status line, headers,
body), the SSRF guard resolves once and connects to the checked address on every hop
(through a ``socks5://`` proxy too: the name is resolved and checked here, the proxy
is handed the address), the body is pulled after ``check_head`` and decoded in bounded
steps (``clients.codings``: a gzip, deflate, brotli or stacked-encoding bomb stops at
the cap, more than five stacked codings are refused). Proxies: ``http://`` (absolute
form for http, a CONNECT tunnel for https), ``https://`` for http sites, ``socks5://``
and ``socks5h://`` (python-socks).
"""

from __future__ import annotations

import http.client
import time
import zlib
from typing import ClassVar

import brotli

from config import FetchSettings
from exceptions import (
    ClientError,
    NetworkError,
    ProxyRefused,
    ResponseRejected,
    TimedOut,
    UnsafeURL,
)
from external_interface.clients.bounds import (
    PORTS,
    BoundedClient,
    check_head,
    head_problem,
    over_cap,
    raise_masked,
    request_headers,
    target,
)
from external_interface.clients.codings import (
    ACCEPT_ENCODING,
    BodyTooLarge,
    UndecodableBody,
    decoder_for,
)
from external_interface.clients.http_transport import (
    Deadline,
    Exchange,
    ProxyRefusal,
    Route,
    Transport,
)
from external_interface.decode import header_charset
from external_interface.http import Request, Response
from external_interface.url_guard import UrlGuard
from utils.urls import redact_url

CHUNK = 64 * 1024
DEFAULT_HEADERS = {"Accept": "*/*", "Accept-Encoding": ACCEPT_ENCODING}
_NETWORK_ERRORS = (http.client.HTTPException, OSError)


class HttpClient(BoundedClient[Exchange]):
    """Kept-alive connection pools per process; bounds from ``FetchSettings``. The pools
    are built here, not at import, and again in a forked child."""

    name = "http"
    library_errors: ClassVar[tuple[type[Exception], ...]] = (
        OSError, ValueError, LookupError, ArithmeticError, EOFError,
        http.client.HTTPException, zlib.error, brotli.error)

    def __init__(self, settings: FetchSettings, guard: UrlGuard | None = None) -> None:
        super().__init__(settings, guard)
        self.transport = Transport(guard, settings.connect_timeout_s, settings.read_timeout_s,
                                   settings.ca_file or None)

    def close(self) -> None:
        self.transport.close()

    def _send(self, hop: Request, url: str, deadline: Deadline) -> Exchange:
        """Route and build (a bad request is a ``ClientError``), then send within the time left."""
        parts = self._check_url(hop, url)
        if deadline.left() <= 0:
            raise TimedOut("fetch deadline passed before the request", url=redact_url(url))
        try:
            scheme = parts.scheme.lower()
            route = Route(scheme, parts.hostname or "", parts.port or PORTS[scheme], hop.proxy)
            proxy = self.transport.proxy(hop.proxy) if hop.proxy is not None else None
            absolute = proxy is not None and proxy.forwards and scheme == "http"
            headers = request_headers(hop, parts, DEFAULT_HEADERS)
            if absolute and proxy is not None:
                headers.update(proxy.headers)
            path = target(parts, scheme, absolute)
        except ValueError as exc:  # a bad port, host, proxy URL or credential
            raise_masked(ClientError, "request cannot be built", exc, url)
        try:
            sent = self.transport.send(route, hop.method, path, headers, hop.data)
        except UnsafeURL as exc:
            raise UnsafeURL(str(exc), url=redact_url(url)) from None
        except ProxyRefusal as exc:  # unreachable, or it refused the credentials or the tunnel
            raise_masked(ProxyRefused, "proxy refused", exc, url, exc.status)
        except ValueError as exc:  # a header or URL http.client refuses to send
            raise_masked(ClientError, "request cannot be sent", exc, url)
        except OSError as exc:
            what = "fetch deadline passed" if deadline.passed else "request failed"
            raise_masked(NetworkError, what, exc, url)
        except http.client.InvalidURL as exc:  # a URL http.client refuses to send
            raise_masked(ClientError, "request cannot be sent", exc, url)
        except http.client.HTTPException as exc:
            what = "fetch deadline passed" if deadline.passed else "response is broken"
            raise_masked(NetworkError, what, exc, url)
        problem = head_problem(sent.defects, sent.headers)
        if problem:
            sent.release()
            raise ResponseRejected(f"response headers are invalid: {problem}",
                                   url=redact_url(url), status=sent.status)
        return sent

    def _read(self, sent: Exchange, url: str, accept: tuple[str, ...],
              deadline: Deadline) -> Response:
        try:
            check_head(sent.status, sent.headers, url, accept, self.settings.max_body_bytes)
            body = _read_capped(sent, url, self.settings.max_body_bytes, deadline)
        finally:
            sent.release()
        return Response(url, sent.status, sent.headers, body,
                        header_charset(sent.headers.get("content-type")),
                        time.monotonic() - deadline.started)


def _read_capped(sent: Exchange, url: str, cap: int, deadline: Deadline) -> bytes:
    """Read the decoded body, stopping at ``cap`` bytes (the sockets stop at the deadline):
    each received chunk is decoded in bounded steps (``clients.codings``), so a
    decompression bomb stops at the cap, not in memory."""
    chunks: list[bytes] = []
    size = 0
    try:
        decoder = decoder_for(sent.headers.get("content-encoding"), cap)
        while raw := sent.read1(CHUNK):
            if decoder is None:
                chunks.append(raw)
                size += len(raw)
            else:
                size += decoder.feed(raw, chunks, cap - size)
            if size > cap:
                raise over_cap(cap, url, sent.status)
        if sent.length_remaining:
            raise http.client.IncompleteRead(b"", sent.length_remaining)
        if decoder is not None:
            size += decoder.finish(chunks, cap - size)
            if size > cap:
                raise over_cap(cap, url, sent.status)
    except UndecodableBody as exc:
        raise_masked(ResponseRejected, "body does not decode as its Content-Encoding says",
                     exc, url, sent.status)
    except BodyTooLarge:
        raise over_cap(cap, url, sent.status) from None
    except (*_NETWORK_ERRORS, ValueError) as exc:
        what = "fetch deadline passed" if deadline.passed else "body broken off"
        raise_masked(NetworkError, what, exc, url)
    return b"".join(chunks)
