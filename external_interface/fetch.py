"""The bounded HTTP fetch every task uses, on ``fetch_transport``'s kept-alive
connections.

Bounds: connect and read timeouts; a wall-clock deadline over the whole fetch,
headers and redirects included (every socket obeys ``fetch_transport.Deadline``,
so a server dripping a byte a second cannot stretch it); a cap on decoded body
bytes (urllib3's decoders, >= 2.7, decode in bounded steps, so a gzip, deflate,
brotli or nested-encoding bomb stops at the cap); a refusal of unwanted content types
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

import base64
import contextlib
import functools
import http.client
import re
import time
import zlib
from dataclasses import replace
from typing import NoReturn
from urllib.parse import SplitResult, unquote, urlsplit

import brotli
from urllib3.response import ContentDecoder, _get_decoder
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
from external_interface.fetch_transport import Deadline, Exchange, Route, Transport
from external_interface.http import (
    Request,
    Response,
    media_type_matches,
)
from external_interface.statuses import rule_for, status_error
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
_NETWORK_ERRORS = (http.client.HTTPException, OSError)
_PORTS = {"http": 80, "https": 443}
# Content-Encodings decoded (in bounded steps: a bomb stops at the cap); others are kept
_DECODED = frozenset({"gzip", "x-gzip", "deflate", "br"})
_DECODE_ERRORS = (zlib.error, brotli.error, OSError)
_TUNNEL_407 = re.compile(r"Tunnel connection failed: 407\b")  # http.client's message


class Fetcher:
    """Kept-alive connection pools per process; bounds from ``FetchSettings``.

    ``guard`` turns the SSRF check on (every hop, at connect time). The pools are
    built here, not at import, and again in a forked child.
    """

    def __init__(self, settings: FetchSettings, guard: UrlGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard
        self.transport = Transport(guard, settings.connect_timeout_s, settings.read_timeout_s)

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
            sent = self._send(hop, url, deadline)
            location = sent.headers.get("location")
            if sent.status not in REDIRECTS or location is None:
                return self._read(sent, url, hop.accept_types, deadline)
            try:
                hop = _next_hop(hop, url, sent.status, location)
            finally:
                sent.release()  # a redirect's body unread: its connection is closed
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

    def _send(self, hop: Request, url: str, deadline: Deadline) -> Exchange:
        """Route and build (a bad request is a ``ClientError``), then send within the time left."""
        parts = self._check_url(hop, url)
        if deadline.left() <= 0:
            raise NetworkError("fetch deadline passed before the request", url=redact_url(url))
        try:
            scheme = parts.scheme.lower()
            route = Route(scheme, parts.hostname or "", parts.port or _PORTS[scheme], hop.proxy)
            absolute = hop.proxy is not None and scheme == "http"
            target = _target(parts, scheme, absolute)
            headers = _headers(hop, parts)
            if absolute and hop.proxy is not None:
                headers.update(self.transport.proxy(hop.proxy).headers)
        except ValueError as exc:  # a bad port, host, proxy URL or credential
            _raise(ClientError, "request cannot be built", exc, url)
        try:
            sent = self.transport.send(route, hop.method, target, headers, hop.data)
        except UnsafeURL as exc:
            raise UnsafeURL(str(exc), url=redact_url(url)) from None
        except ValueError as exc:  # a header or URL http.client refuses to send
            _raise(ClientError, "request cannot be sent", exc, url)
        except OSError as exc:
            if _TUNNEL_407.search(str(exc)):  # an https CONNECT the proxy refused
                _raise(ProxyRefused, "proxy refused the tunnel", exc, url, 407)
            what = "fetch deadline passed" if deadline.passed else "request failed"
            _raise(NetworkError, what, exc, url)
        except http.client.InvalidURL as exc:  # a URL http.client refuses to send
            _raise(ClientError, "request cannot be sent", exc, url)
        except http.client.HTTPException as exc:
            what = "fetch deadline passed" if deadline.passed else "response is broken"
            _raise(NetworkError, what, exc, url)
        problem = _invalid_head(sent)
        if problem:
            sent.release()
            raise ResponseRejected(f"response headers are invalid: {problem}",
                                   url=redact_url(url), status=sent.status)
        return sent

    def _read(self, sent: Exchange, url: str, accept: tuple[str, ...],
              deadline: Deadline) -> Response:
        try:
            if 200 <= sent.status < 300:
                _check_type(sent, url, accept)
            body = _read_capped(sent, url, self.settings.max_body_bytes, deadline)
        finally:
            sent.release()
        return Response(url, sent.status, sent.headers, body,
                        header_charset(sent.headers.get("content-type")),
                        time.monotonic() - deadline.started)


def _invalid_head(sent: Exchange) -> str | None:
    """Why the response's head cannot be trusted (lines that are not headers, lengths that
    disagree: a request smuggling trick), or None."""
    if sent.defects:
        return repr(sent.defects[0])
    lengths = {value.strip() for value in sent.headers.getlist("content-length")}
    if len(lengths) > 1:
        return f"conflicting Content-Length values {sorted(lengths)}"
    return None


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
        token = base64.b64encode(credentials.encode("latin-1")).decode()
        headers["Authorization"] = f"Basic {token}"
    return headers


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


def _check_type(sent: Exchange, url: str, accept: tuple[str, ...]) -> None:
    """Refuse a declared media type the step cannot use, before reading the body."""
    if not accept:
        return
    declared = (sent.headers.get("content-type") or "").split(";")[0].strip().lower()
    if not declared or _accepts(declared, accept):
        return
    raise ResponseRejected(
        f"content type {declared!r} is not accepted (accepts {', '.join(accept)}): "
        "refused unread; add it to the request's accept_types to fetch it",
        url=redact_url(url), status=sent.status)


@functools.lru_cache(maxsize=1024)
def _accepts(declared: str, accept: tuple[str, ...]) -> bool:
    """Whether ``accept`` names media type ``declared`` (a few pairs per crawl: cached)."""
    return any(media_type_matches(declared, a) for a in accept)


def _read_capped(sent: Exchange, url: str, cap: int, deadline: Deadline) -> bytes:
    """Read the decoded body, stopping at ``cap`` bytes (the sockets stop at the deadline):
    each received chunk is decoded in steps of at most what the cap still allows, so a
    decompression bomb stops at the cap, not in memory."""
    declared = sent.headers.get("content-length") or ""
    encoding = (sent.headers.get("content-encoding") or "").strip().lower()
    decoder = _decoder(encoding)
    if declared.isdigit() and not encoding and int(declared) > cap:
        raise ResponseRejected(f"Content-Length {declared} exceeds the cap of {cap} bytes",
                               url=redact_url(url), status=sent.status)
    chunks: list[bytes] = []
    size = 0
    try:
        while raw := sent.read1(CHUNK):
            if decoder is None:
                chunks.append(raw)
                size += len(raw)
            else:
                size = _decode_into(chunks, size, decoder, raw, cap, url, sent.status)
            if size > cap:
                raise ResponseRejected(f"body exceeds the cap of {cap} decoded bytes",
                                       url=redact_url(url), status=sent.status)
        if sent.length_remaining:
            raise http.client.IncompleteRead(b"", sent.length_remaining)
        if decoder is not None:
            size = _decode_into(chunks, size, decoder, None, cap, url, sent.status)
            if size > cap:
                raise ResponseRejected(f"body exceeds the cap of {cap} decoded bytes",
                                       url=redact_url(url), status=sent.status)
    except (*_NETWORK_ERRORS, ValueError) as exc:
        what = "fetch deadline passed" if deadline.passed else "body broken off"
        _raise(NetworkError, what, exc, url)
    return b"".join(chunks)


def _decoder(encoding: str) -> ContentDecoder | None:
    """A decoder for the encodings decoded (urllib3's, which decode in bounded steps);
    None for identity, or an encoding none of whose parts is known (kept as sent)."""
    if not encoding or encoding == "identity":
        return None
    parts = [part.strip() for part in encoding.split(",")]
    if not any(part in _DECODED for part in parts):
        return None
    return _get_decoder(encoding)


def _decode_into(chunks: list[bytes], size: int, decoder: ContentDecoder, raw: bytes | None,
                 cap: int, url: str, status: int) -> int:
    """Decode ``raw`` (None: flush) into ``chunks``, no more than ``cap`` + 1 bytes in all;
    returns the new size. A body that is not what its Content-Encoding says is refused."""
    try:
        if raw is None:
            out = decoder.flush()
            chunks.append(out)
            return size + len(out)
        out = decoder.decompress(raw, max_length=cap + 1 - size)
        chunks.append(out)
        size += len(out)
        while decoder.has_unconsumed_tail and size <= cap:
            out = decoder.decompress(b"", max_length=cap + 1 - size)
            if not out:
                break
            chunks.append(out)
            size += len(out)
        return size
    except _DECODE_ERRORS as exc:
        _raise(ResponseRejected, "body does not decode as its Content-Encoding says",
               exc, url, status)


def raise_for_status(response: Response) -> None:
    """Raise the error ``statuses.STATUSES`` names for the response's status, if any."""
    if rule_for(response.status) is None:  # most pages: nothing to redact, no header read
        return
    error = status_error(response.status, redact_url(response.url),
                         response.headers.get("Retry-After"))
    if error is not None:
        raise error
