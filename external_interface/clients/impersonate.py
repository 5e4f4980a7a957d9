"""The ``impersonate`` client: HTTP/2 with a current Chrome's TLS and HTTP/2 fingerprint,
on curl_cffi (libcurl-impersonate: BoringSSL and nghttp2 set up as Chrome sets them).

Why curl_cffi and not impit: every bound has to hold on this client's own connections,
and curl_cffi exposes libcurl's options one by one, where impit's client (reqwest under
an httpx-like API) hides them. ``CURLOPT_RESOLVE`` pins each connection to the address
the SSRF guard checked, so a DNS answer that changes after the check (rebinding) never
matters; the header callback runs the content-type gate once the head is in and the
write callback counts decoded bytes, and either stops the transfer by raising; one
``TIMEOUT_MS`` bounds a whole hop, a proxy's CONNECT or SOCKS handshake included; a
proxy (http, https, socks5, socks5h) is set per request, as the proxy pool hands them
out. impit has no resolver hook, one proxy per client, and browser profiles by family
("chrome") rather than by version, so a fingerprint could not be pinned to golden
values in the tests. curl_cffi also ships manylinux wheels with libcurl inside.

``PROFILE`` is the one browser presented: the TLS ClientHello, HTTP/2 SETTINGS, window
and pseudo-header order, and the default headers (User-Agent, client hints, Accept,
Sec-Fetch-*, Accept-Encoding) in Chrome's order, all from curl-impersonate, so they
agree by construction. A request's own headers go over those, except the ones that
say which browser this is (``IDENTITY``): a pooled or site User-Agent that named
another browser would contradict the handshake, which is what defences look for. Over
plain http it speaks HTTP/1.1, as Chrome does (no h2c upgrade).

How each bound holds here:

- deadline: ``TIMEOUT_MS`` is the time left of the fetch's ``Deadline`` at each hop, and
  ``CONNECTTIMEOUT_MS`` the connect timeout within it; the read timeout is curl's
  low-speed limit (less than 1 byte/s for ``FETCH_READ_TIMEOUT_S``, whole seconds).
  Resolving for the SSRF guard is, as for ``http``, the one step no timer bounds.
- decoded-body cap: libcurl decodes gzip, deflate, br and zstd (at most five stacked
  codings, libcurl's own limit, as ``http`` allows) and hands the write callback at most
  16 KiB decoded at a time; the callback stops the transfer once the cap is passed.
- redirects: never followed by curl (``FOLLOWLOCATION`` off); the shared loop follows
  them hop by hop, and a redirect's body is not read (the transfer stops at its head).
- SSRF guard: direct and through ``socks5://`` (curl resolves, so ``RESOLVE`` applies);
  through an http proxy or ``socks5h://`` the proxy resolves the name, and the guard
  checks what the URL says, as for ``http``.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Mapping
from typing import ClassVar, NoReturn
from urllib.parse import SplitResult, urlunsplit

from curl_cffi import Curl, CurlECode, CurlError, CurlHttpVersion, CurlInfo, CurlOpt
from urllib3 import HTTPHeaderDict

from config import FetchSettings
from exceptions import (
    ClientError,
    CrawlError,
    NetworkError,
    ProxyRefused,
    ResponseRejected,
    TimedOut,
    UnsafeURL,
)
from external_interface.clients.bounds import (
    PORTS,
    REDIRECTS,
    BoundedClient,
    check_head,
    head_problem,
    over_cap,
    raise_masked,
    request_headers,
)
from external_interface.clients.http_transport import FIELD_NAME, Deadline, Proxy
from external_interface.decode import header_charset
from external_interface.http import Request, Response
from external_interface.url_guard import UrlGuard, literal_ip
from utils.urls import redact_text, redact_url, secret_free

PROFILE = "chrome146"
ACCEPT_ENCODING = b"gzip, deflate, br, zstd"  # the profile's, which libcurl then decodes
IDENTITY = frozenset({"user-agent", "sec-ch-ua", "sec-ch-ua-mobile", "sec-ch-ua-platform",
                      "accept-encoding"})
MAX_IDLE = 32  # curl handles kept per process; each keeps its own connections
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_TOKEN = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyz"
                   "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
# What a SOCKS reply says when the proxy could not reach the site (CURLINFO_PROXY_ERROR:
# refused, general failure, host or network unreachable, TTL expired, name unresolved):
# the site's failure, not the proxy's.
_SOCKS_TARGET_DOWN = frozenset({19, 20, 21, 22, 24, 27})
_PROXY_DOWN = frozenset({CurlECode.COULDNT_CONNECT, CurlECode.COULDNT_RESOLVE_PROXY})
_REQUEST_REFUSED = frozenset({CurlECode.URL_MALFORMAT, CurlECode.BAD_FUNCTION_ARGUMENT})
_BROKEN = "response is broken"
_NETWORK: dict[int, str] = {
    CurlECode.PARTIAL_FILE: "body broken off", CurlECode.GOT_NOTHING: _BROKEN,
    CurlECode.RECV_ERROR: _BROKEN, CurlECode.HTTP2: _BROKEN, CurlECode.HTTP2_STREAM: _BROKEN,
    CurlECode.UNSUPPORTED_PROTOCOL: _BROKEN}  # that one: HTTP/0.9, a reply with no status line
_TIMER_SLACK_S = 0.01  # curl's timer fired this close to the deadline: the deadline's


class _Stop(Exception):
    """Raised in a callback to end the transfer at a redirect's head, body unread."""


class _Hop:
    """One hop's response as curl delivers it: heads (a 1xx's, then the final one),
    then the body, checked as they come (``check_head``, the cap)."""

    def __init__(self, url: str, accept: tuple[str, ...], cap: int) -> None:
        self.url, self.accept, self.cap = url, accept, cap
        self.status = 0
        self.headers = HTTPHeaderDict()
        self.body: list[bytes] = []
        self.size = 0
        self._fields: list[tuple[str, str]] = []
        self._defects: list[str] = []
        self._final = False  # the final (non-1xx) head is complete

    def header(self, line: bytes) -> int:
        """A line of a head (curl hands them one by one, the blank one last)."""
        if self._final:
            return len(line)  # a chunked body's trailers: not part of the head
        text = line.decode("latin-1").rstrip("\r\n")
        if text.startswith("HTTP/"):  # a head begins: after a 1xx, the next one
            self.status, self._fields, self._defects = int(text.split(None, 2)[1]), [], []
        elif text[:1] in (" ", "\t"):  # an obsolete line folding, as http reads one
            if not self._fields:
                self._defects.append(f"the head starts with a folded line: {text[:60]!r}")
            else:
                name, value = self._fields[-1]
                self._fields[-1] = (name, " ".join(filter(None, (value, text.strip(" \t")))))
        elif text:
            name, colon, value = text.partition(":")
            if not colon or not FIELD_NAME.fullmatch(name):
                self._defects.append(f"not a header field: {text[:60]!r}")
            else:
                self._fields.append((name, value.strip(" \t")))
        elif self.status >= 200:
            self._head_done()
        return len(line)

    def _head_done(self) -> None:
        self._final = True
        for name, value in self._fields:
            self.headers.add(name, value)
        problem = head_problem(self._defects, self.headers)
        if problem:
            raise ResponseRejected(f"response headers are invalid: {problem}",
                                   url=redact_url(self.url), status=self.status)
        if self.status in REDIRECTS and "location" in self.headers:
            raise _Stop
        check_head(self.status, self.headers, self.url, self.accept, self.cap)

    def write(self, piece: bytes) -> int:
        """Decoded body bytes; past the cap the transfer stops."""
        self.size += len(piece)
        if self.size > self.cap:
            raise over_cap(self.cap, self.url, self.status)
        self.body.append(piece)
        return len(piece)

    def release(self) -> None:
        """Nothing to give back: curl keeps its connection (or closed it at a stop)."""


class ImpersonateClient(BoundedClient[_Hop]):
    """curl handles kept per process (each with its live connections and TLS sessions),
    one per fetch in flight, rebuilt in a forked child."""

    name = "impersonate"
    library_errors: ClassVar[tuple[type[Exception], ...]] = (
        CurlError, OSError, ValueError, LookupError, ArithmeticError)

    def __init__(self, settings: FetchSettings, guard: UrlGuard | None = None) -> None:
        super().__init__(settings, guard)
        self._lock = threading.Lock()
        self._idle: list[Curl] = []
        self._pid = os.getpid()
        self._orphans: list[Curl] = []  # a parent's handles: never cleaned up in a child

    def close(self) -> None:
        with self._lock:
            idle, self._idle = (self._idle if self._pid == os.getpid() else []), []
        for handle in idle:
            handle.close()

    def _send(self, hop: Request, url: str, deadline: Deadline) -> _Hop:
        """The whole hop: request out, head checked, body read under the cap (or stopped
        at a redirect's head)."""
        parts = self._check_url(hop, url)
        try:
            (parts.hostname or "").encode("idna")  # an empty or overlong label: no host at all
        except UnicodeError as exc:
            raise_masked(ClientError, "malformed URL", exc, url)
        left = deadline.left()
        if left <= 0:
            raise TimedOut("fetch deadline passed before the request", url=redact_url(url))
        got = _Hop(url, hop.accept_types, self.settings.max_body_bytes)
        handle = self._take()
        try:
            try:
                self._prepare(handle, hop, parts, left, got)
            except (ValueError, UnicodeError) as exc:  # a header, URL or proxy curl refuses
                raise_masked(ClientError, "request cannot be sent", exc, url)
            handle.perform()
        except _Stop:
            pass
        except UnsafeURL as exc:  # the name resolved to refused addresses only
            raise UnsafeURL(str(exc), url=redact_url(url)) from None
        except CurlError as exc:
            _raise_curl(exc, handle, url, deadline, hop.proxy is not None)
        finally:
            self._give_back(handle)
        return got

    def _read(self, sent: _Hop, url: str, accept: tuple[str, ...],
              deadline: Deadline) -> Response:
        return Response(url, sent.status, sent.headers, b"".join(sent.body),
                        header_charset(sent.headers.get("content-type")),
                        time.monotonic() - deadline.started)

    def _prepare(self, handle: Curl, hop: Request, parts: SplitResult, left: float,
                 got: _Hop) -> None:
        """Every option of this hop on a handle reset to none."""
        settings = self.settings
        handle.impersonate(PROFILE, default_headers=True)
        handle.setopt(CurlOpt.HTTP_VERSION, CurlHttpVersion.V2TLS)  # h2 over TLS, as Chrome
        handle.setopt(CurlOpt.ACCEPT_ENCODING, ACCEPT_ENCODING)  # decoded as the header says
        handle.setopt(CurlOpt.URL, _bare(parts).encode())
        handle.setopt(CurlOpt.PROTOCOLS_STR, b"http,https")
        handle.setopt(CurlOpt.NOSIGNAL, 1)
        handle.setopt(CurlOpt.FOLLOWLOCATION, 0)
        handle.setopt(CurlOpt.TIMEOUT_MS, max(1, math.ceil(left * 1000)))
        handle.setopt(CurlOpt.CONNECTTIMEOUT_MS,
                      max(1, int(min(settings.connect_timeout_s, left) * 1000)))
        handle.setopt(CurlOpt.LOW_SPEED_LIMIT, 1)
        handle.setopt(CurlOpt.LOW_SPEED_TIME, max(1, math.ceil(settings.read_timeout_s)))
        if settings.ca_file:
            handle.setopt(CurlOpt.CAINFO, settings.ca_file)
            handle.setopt(CurlOpt.PROXY_CAINFO, settings.ca_file)
        _method(handle, hop)
        handle.setopt(CurlOpt.HTTPHEADER, _header_lines(request_headers(hop, parts, {})))
        handle.setopt(CurlOpt.HEADERFUNCTION, got.header)
        handle.setopt(CurlOpt.WRITEFUNCTION, got.write)
        self._route(handle, hop, parts)

    def _route(self, handle: Curl, hop: Request, parts: SplitResult) -> None:
        """The proxy (none: the environment's are ignored too), and the guard's checked
        addresses pinned wherever curl itself resolves the site's name."""
        proxy = Proxy.parse(hop.proxy) if hop.proxy is not None else None
        handle.setopt(CurlOpt.PROXY, hop.proxy or "")
        handle.setopt(CurlOpt.NOPROXY, "")
        if proxy is not None:
            handle.setopt(CurlOpt.SUPPRESS_CONNECT_HEADERS, 1)
            handle.setopt(CurlOpt.PROXY_CREDENTIAL_NO_REUSE, 1)
        host = parts.hostname or ""
        if self.guard is None or literal_ip(host) is not None or (
                proxy is not None and proxy.scheme != "socks5"):
            return
        port = parts.port or PORTS[parts.scheme.lower()]
        try:
            found = self.guard.addresses(host, port)
        except OSError as exc:  # curl must not resolve it unchecked: no connection at all
            raise_masked(NetworkError, f"cannot resolve {host}", exc, hop.full_url)
        pinned = ",".join(f"[{a[1][0]}]" if ":" in a[1][0] else a[1][0] for a in found)
        handle.setopt(CurlOpt.RESOLVE, [f"{name}:{port}:{pinned}" for name in _spellings(host)])

    def _take(self) -> Curl:
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's connections are not ours
                self._orphans, self._idle, self._pid = self._idle, [], os.getpid()
            handle = self._idle.pop() if self._idle else None
        if handle is None:
            return Curl()
        handle.reset()
        return handle

    def _give_back(self, handle: Curl) -> None:
        with self._lock:
            if self._pid == os.getpid() and len(self._idle) < MAX_IDLE:
                self._idle.append(handle)
                return
        handle.close()


def _spellings(host: str) -> set[str]:
    """The names curl may look ``host`` up by: as written and, for an international name,
    in punycode (curl matches case and a final dot itself); each is pinned, so neither
    falls through to curl's own resolver."""
    try:
        return {host, host.encode("idna").decode()}
    except UnicodeError:
        return {host}


def _bare(parts: SplitResult) -> str:
    """The URL curl is given: no credentials (they are a header already) and no fragment."""
    netloc = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))


def _method(handle: Curl, hop: Request) -> None:
    method = hop.method.upper()
    if method == "HEAD":
        handle.setopt(CurlOpt.NOBODY, 1)
    elif method == "POST":
        handle.setopt(CurlOpt.POST, 1)
    elif method != "GET":
        handle.setopt(CurlOpt.CUSTOMREQUEST, method.encode())
    if hop.data is not None or method in _BODY_METHODS:
        body = hop.data or b""
        handle.setopt(CurlOpt.POSTFIELDSIZE, len(body))
        handle.setopt(CurlOpt.POSTFIELDS, body)


def _header_lines(headers: Mapping[str, str]) -> list[bytes]:
    """The request's headers as curl takes them, over the profile's defaults (in their
    place: curl-impersonate keeps Chrome's order), the browser's identity excepted.
    ``ValueError`` for a name or value that would break the head (CR, LF, NUL)."""
    lines = [b"Expect:"]  # no 100-continue wait before a body
    for name, value in headers.items():
        if name.lower() in IDENTITY:
            continue
        if not name or not set(name) <= _TOKEN or any(c in value for c in "\r\n\0"):
            raise ValueError(f"invalid header {name!r}: {value[:40]!r}")
        lines.append(f"{name}: {value}".encode("latin-1") if value else
                     f"{name};".encode("latin-1"))
    return lines


def _raise_curl(exc: CurlError, handle: Curl, url: str, deadline: Deadline,
                proxied: bool) -> NoReturn:
    """The ``CrawlError`` for what curl reported: a proxy that cannot be reached or
    refuses is the proxy's fault (``ProxyRefused``), a request curl cannot send the
    request's (``ClientError``), a head curl finds malformed or a body that does not
    decode the response's (``ResponseRejected``), the rest the network's
    (``NetworkError``)."""
    code = exc.code
    kind: type[CrawlError] = NetworkError
    status = None
    what = _NETWORK.get(code, "request failed")
    tunnel = _info(handle, CurlInfo.HTTP_CONNECTCODE) if proxied else 0
    if code == CurlECode.OPERATION_TIMEDOUT:
        kind = TimedOut
        if deadline.left() < _TIMER_SLACK_S:
            what = "fetch deadline passed"
    elif tunnel == 407:
        kind, what, status = ProxyRefused, "proxy refused the tunnel", 407
    elif tunnel and not 200 <= tunnel < 300:
        what = "the proxy's tunnel failed"  # it answered: the site may be what is down
    elif proxied and code in _PROXY_DOWN:
        kind, what = ProxyRefused, "proxy unreachable"
    elif proxied and code == CurlECode.PROXY:
        if _info(handle, CurlInfo.PROXY_ERROR) not in _SOCKS_TARGET_DOWN:
            kind, what = ProxyRefused, "proxy refused"
    elif code in _REQUEST_REFUSED:
        kind, what = ClientError, "request cannot be sent"
    elif code == CurlECode.WEIRD_SERVER_REPLY:
        kind, what = ResponseRejected, "response headers are invalid"
    elif code == CurlECode.BAD_CONTENT_ENCODING:
        kind, what = ResponseRejected, "body does not decode as its Content-Encoding says"
    said = str(exc).removeprefix("Failed to perform, ").split(". See https://curl.se", 1)[0]
    error = kind(redact_text(f"{what}: {said}"), url=redact_url(url), status=status)
    raise error from (exc if secret_free(exc) else None)


def _info(handle: Curl, option: CurlInfo) -> int:
    try:
        value = handle.getinfo(option)
    except CurlError:
        return 0
    return value if isinstance(value, int) else 0
