"""The bounded HTTP fetch every task uses, directly on urllib3's connection pools.

Bounds: connect and read timeouts; a wall-clock deadline over the whole fetch,
headers and redirects included (every socket obeys ``fetch_transport.Deadline``,
so a server dripping a byte a second cannot stretch it); a cap on decoded body
bytes (urllib3 >= 2.7 decodes in bounded steps, so a gzip, deflate, brotli or
nested-encoding bomb stops at the cap); a refusal of unwanted content types
after the headers, before any body byte is read; redirects followed by hand
with a hop cap, a scheme check, the job's allowed domains (``OffSite``) and,
with a ``UrlGuard``, the SSRF check on every hop; ``Authorization`` and
``Proxy-Authorization`` dropped when a redirect leaves the origin, cookies when
it leaves the host.

A request is exactly what ``http.Request`` says: ``params`` urlencoded onto the URL
(after its own query), ``cookies`` as the Cookie header (an explicit Cookie
header wins), credentials in the URL as Basic auth, the proxy from
``Request.proxy`` only. Nothing carries over from one fetch to the next but
kept-alive connections: no cookie jar, no proxy from the environment.

Every error is a ``CrawlError`` whose message and ``url`` have credentials
masked (``utils.urls.redact_text``): a proxy URL's password never reaches a
log line or the ledger, and a cause whose text held one is not chained.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import replace
from http.client import HTTPException
from typing import NoReturn, cast
from urllib.parse import SplitResult, unquote, urlsplit

import urllib3.exceptions
from urllib3 import HTTPResponse, Timeout
from urllib3.util import Retry, make_headers
from urllib3.util.request import ACCEPT_ENCODING

from config import FetchSettings
from exceptions import (
    ClientError,
    CrawlError,
    NetworkError,
    OffSite,
    ProxyRefused,
    ResponseRejected,
    UnsafeURL,
)
from external_interface.fetch_transport import Deadline, Transport
from external_interface.http import (
    Request,
    Response,
    media_type_matches,
)
from external_interface.statuses import status_error
from external_interface.url_guard import UrlGuard
from utils.decode import header_charset
from utils.domains import AllowedDomains
from utils.urls import UnsupportedURL, normalize_url, redact_text, redact_url, secret_free

ALLOWED_SCHEMES = frozenset({"http", "https"})
REDIRECTS = frozenset({301, 302, 303, 307, 308})
CHUNK = 64 * 1024
DEFAULT_HEADERS = {"Accept": "*/*", "Accept-Encoding": ACCEPT_ENCODING.replace(",", ", ")}
_ORIGIN_HEADERS = frozenset({"authorization", "proxy-authorization"})
_BODY_HEADERS = frozenset({"content-length", "content-type", "transfer-encoding"})
_NETWORK_ERRORS = (urllib3.exceptions.HTTPError, HTTPException, OSError)
_TUNNEL_407 = re.compile(r"Tunnel connection failed: 407\b")  # http.client's message


class Fetcher:
    """Kept-alive connection pools per process; bounds from ``FetchSettings``.

    ``guard`` turns the SSRF check on (every hop, at connect time). The pools are
    built here, not at import, and again in a forked child.
    """

    def __init__(self, settings: FetchSettings, guard: UrlGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard
        self.transport = Transport(guard)
        self._timeout = Timeout(connect=settings.connect_timeout_s, read=settings.read_timeout_s)
        self._no_retries = Retry.from_int(False, redirect=False)  # built once, not per request

    def fetch(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """Fetch, following redirects; raise the classified error for a bad outcome.

        ``allowed``: the job's domains; a URL off them, the first or a redirect's,
        raises ``OffSite`` before it is requested.
        """
        response = self.fetch_raw(request, allowed)
        raise_for_status(response)
        return response

    def fetch_raw(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """Fetch within every bound but without judging the status."""
        with Deadline(self.settings.deadline_s) as deadline:
            return self._follow(request, deadline, allowed)

    def _follow(self, request: Request, deadline: Deadline,
                allowed: AllowedDomains | None) -> Response:
        hop = request
        for hops in range(self.settings.max_redirects + 1):
            url = hop.full_url
            if allowed and not allowed.allows_url(url):
                raise OffSite(_offsite(url, allowed, redirected=hops > 0), url=redact_url(url))
            raw = self._send(hop, url, deadline)
            location = raw.headers.get("location")
            if raw.status not in REDIRECTS or location is None:
                return self._read(raw, url, hop.accept_types, deadline)
            try:
                hop = _next_hop(hop, url, raw.status, location)
            finally:
                _release(raw)
        raise ResponseRejected(f"more than {self.settings.max_redirects} redirects",
                               url=redact_url(request.url))

    def _check_url(self, hop: Request, url: str) -> SplitResult:
        try:
            parts = urlsplit(url)
        except ValueError as exc:  # "http://[bad" and friends
            _raise(ClientError, "malformed URL", exc, url)
        if parts.scheme.lower() not in ALLOWED_SCHEMES:
            raise ResponseRejected(f"scheme {parts.scheme or '(none)'!r} is not http/https",
                                   url=redact_url(url))
        if self.guard is not None:
            self.guard.check_url(url, resolve=hop.proxy is not None)
        return parts

    def _send(self, hop: Request, url: str, deadline: Deadline) -> HTTPResponse:
        """Route and build (a bad request is a ``ClientError``), then send within the time left."""
        parts = self._check_url(hop, url)
        if deadline.left() <= 0:
            raise NetworkError("fetch deadline passed before the request", url=redact_url(url))
        try:
            scheme = parts.scheme.lower()
            pool = self.transport.pool(scheme, parts.hostname or "", parts.port, hop.proxy)
            target = _target(parts, scheme, absolute=hop.proxy is not None and scheme == "http")
            headers = _headers(hop, parts)
        except ValueError as exc:  # a bad port, host, proxy URL or credential
            _raise(ClientError, "request cannot be built", exc, url)
        try:
            return cast(HTTPResponse, pool.urlopen(
                hop.method, target, body=hop.data, headers=headers, retries=self._no_retries,
                redirect=False, assert_same_host=False, timeout=self._timeout,
                preload_content=False, decode_content=True, release_conn=False))
        except UnsafeURL as exc:
            raise UnsafeURL(str(exc), url=redact_url(url)) from None
        except urllib3.exceptions.InvalidHeader as exc:
            _raise(ResponseRejected, "response headers are invalid", exc, url)
        except ValueError as exc:  # a header or URL http.client refuses to send
            _raise(ClientError, "request cannot be sent", exc, url)
        except urllib3.exceptions.ProxyError as exc:
            if _TUNNEL_407.search(str(exc)):  # an https CONNECT the proxy refused
                _raise(ProxyRefused, "proxy refused the tunnel", exc, url, 407)
            _raise(NetworkError, "proxy failed", exc, url)
        except _NETWORK_ERRORS as exc:
            what = "fetch deadline passed" if deadline.passed else "request failed"
            _raise(NetworkError, what, exc, url)

    def _read(self, raw: HTTPResponse, url: str, accept: tuple[str, ...],
              deadline: Deadline) -> Response:
        try:
            if 200 <= raw.status < 300:
                _check_type(raw, url, accept)
            body = _read_capped(raw, url, self.settings.max_body_bytes, deadline)
        finally:
            _release(raw)
        return Response(url, raw.status, dict(raw.headers.itermerged()), body,
                        header_charset(raw.headers.get("content-type")),
                        time.monotonic() - deadline.started)


def _offsite(url: str, allowed: AllowedDomains, redirected: bool) -> str:
    host = urlsplit(url).hostname or "(none)"
    how = "a redirect leads to" if redirected else "the request names"
    return f"offsite: {how} host {host!r}, outside {', '.join(allowed.domains)}"


def _target(parts: SplitResult, scheme: str, absolute: bool) -> str:
    """The request target: origin form, or absolute form (no credentials) for an http proxy."""
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    if not absolute:
        return path
    return f"{scheme}://{parts.netloc.rpartition('@')[2]}{path}"


def _headers(hop: Request, parts: SplitResult) -> dict[str, str]:
    """Defaults, then the request's own headers (any case), its cookies and URL credentials."""
    names = {name.lower() for name in hop.headers}
    headers = {k: v for k, v in DEFAULT_HEADERS.items() if k.lower() not in names} | hop.headers
    if hop.cookies and "cookie" not in names:
        headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in hop.cookies.items())
    if "@" in parts.netloc and "authorization" not in names and (parts.username or parts.password):
        credentials = f"{unquote(parts.username or '')}:{unquote(parts.password or '')}"
        headers["Authorization"] = make_headers(basic_auth=credentials)["authorization"]
    return headers


def _release(raw: HTTPResponse) -> None:
    """Give the connection back to its pool, closed unless the body was read to its end
    (urllib3 has then put it back, kept alive). A redirect's is closed, body unread: the
    next hop may come before a server that closes after a redirect has said so."""
    if raw.connection is not None:
        raw.close()
        raw.release_conn()


def _raise(kind: type[CrawlError], what: str, exc: BaseException, url: str,
           status: int | None = None) -> NoReturn:
    """Raise ``kind`` with credentials masked, chained to ``exc`` only if none was in it."""
    error = kind(redact_text(f"{what}: {type(exc).__name__}: {exc}"),
                 url=redact_url(url), status=status)
    raise error from (exc if secret_free(exc) else None)


def _next_hop(hop: Request, url: str, status: int, location: str) -> Request:
    """The request for a redirect's target: method per RFC 9110, origin-bound headers
    dropped when the origin changes, cookies when the host does, params already in the URL."""
    with contextlib.suppress(UnicodeError):  # raw UTF-8 in the header, read as latin-1
        location = location.encode("latin-1").decode("utf-8")
    try:
        target = normalize_url(location, url)
    except UnsupportedURL as exc:
        raise ResponseRejected(f"redirect refused: {redact_text(str(exc))}",
                               url=redact_url(url), status=status) from None
    method, data, headers, cookies = hop.method, hop.data, hop.headers, hop.cookies
    if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
        method, data, headers = "GET", None, _without(headers, _BODY_HEADERS)
    here, there = urlsplit(url), urlsplit(target)
    if _origin(here) != _origin(there):
        headers = _without(headers, _ORIGIN_HEADERS)
    if here.hostname != there.hostname:
        headers, cookies = _without(headers, frozenset({"cookie"})), {}
    return replace(hop, url=target, method=method, data=data, params={}, headers=headers,
                   cookies=cookies)


def _without(headers: dict[str, str], names: frozenset[str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in names}


def _origin(parts: SplitResult) -> tuple[str, str, int | None]:
    return parts.scheme, parts.hostname or "", parts.port


def _check_type(raw: HTTPResponse, url: str, accept: tuple[str, ...]) -> None:
    """Refuse a declared media type the step cannot use, before reading the body."""
    if not accept:
        return
    declared = raw.headers.get("content-type", "").split(";")[0].strip().lower()
    if not declared or any(media_type_matches(declared, a) for a in accept):
        return
    raise ResponseRejected(
        f"content type {declared!r} is not accepted (accepts {', '.join(accept)}): "
        "refused unread; add it to the request's accept_types to fetch it",
        url=redact_url(url), status=raw.status)


def _read_capped(raw: HTTPResponse, url: str, cap: int, deadline: Deadline) -> bytes:
    """Read the decoded body, stopping at ``cap`` bytes (the sockets stop at the deadline)."""
    declared = raw.headers.get("content-length", "")
    if declared.isdigit() and "content-encoding" not in raw.headers and int(declared) > cap:
        raise ResponseRejected(f"Content-Length {declared} exceeds the cap of {cap} bytes",
                               url=redact_url(url), status=raw.status)
    identity = "content-encoding" not in raw.headers
    chunks: list[bytes] = []
    size = 0
    try:
        while chunk := raw.read1(min(CHUNK, cap + 1 - size), decode_content=True):
            chunks.append(chunk)
            size += len(chunk)
            if size > cap:
                raise ResponseRejected(f"body exceeds the cap of {cap} decoded bytes",
                                       url=redact_url(url), status=raw.status)
            if identity and raw.length_remaining == 0:
                break  # all declared bytes are here and nothing is left to decode
    except urllib3.exceptions.DecodeError as exc:
        _raise(ResponseRejected, "body does not decode as its Content-Encoding says",
               exc, url, raw.status)
    except (*_NETWORK_ERRORS, ValueError) as exc:
        what = "fetch deadline passed" if deadline.passed else "body broken off"
        _raise(NetworkError, what, exc, url)
    return b"".join(chunks)


def raise_for_status(response: Response) -> None:
    """Raise the error ``statuses.STATUSES`` names for the response's status, if any."""
    error = status_error(response.status, redact_url(response.url),
                         response.headers.get("Retry-After"))
    if error is not None:
        raise error
