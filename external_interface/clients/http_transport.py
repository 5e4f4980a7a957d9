"""The connection layer under the ``http`` client: kept-alive connections, a hard wall-clock
deadline and the SSRF guard, on ``http.client`` (the standard library's HTTP/1.1).

Socket timeouts bound each ``recv``, not a whole exchange: a server dripping
its status line and headers a byte every few seconds never trips them.
``Deadline`` closes that gap without a thread per fetch: every socket the
client's pools open is a ``DeadlineSocket`` (a ``DeadlineSSLSocket`` once TLS
wraps it), which before each blocking call (``recv``, ``send``, the TLS
handshake) lowers its bound to the time left before the running fetch's
deadline, and refuses once none is left. A plain socket stays blocking and the
kernel holds the bound (``SO_RCVTIMEO``, ``SO_SNDTIMEO``; its ``sendall`` is a
loop of bounded sends); CPython bounds a whole TLS handshake and TLS record read
by the timeout they start with. So whatever phase is blocked (TLS handshake, a
proxy's CONNECT, status line, headers, body) ends by the deadline; a connect
gets the time left when it starts (a name's addresses are tried in turn, each try
within the time still left), and so does a SOCKS5 handshake. The running deadline
is a context variable, so a kept-alive connection obeys whichever fetch is using it.
Name resolution is the one step no socket bounds.

A guarded connection resolves its host once, keeps only the addresses
``UrlGuard`` allows and connects to one of those, so the address checked is the
address connected to on every hop; through a ``socks5://`` proxy the proxy is handed
that checked address. Connections to a proxy obey the deadline but are not guarded:
the proxy is configuration, not page input (a ``socks5h://`` or http proxy resolves
the site's name itself, so there the guard checks only what the URL says).

``Transport`` keeps idle connections per route (scheme, host, port, proxy), built by
the client in the process that uses them and again after a ``fork``, whose child
must not share the parent's sockets. A request goes out on an idle connection of its
route when there is one; one that the server closed while idle (it may, without
saying so) is replaced, once, for a request that is safe to repeat. Through an http
proxy, an http request goes to the proxy in absolute form, an https one through a
CONNECT tunnel, and the proxy's credentials become ``Proxy-Authorization`` and
nothing else; through a SOCKS5 proxy (python-socks, credentials per RFC 1929) every
connection is a tunnel. A proxy that cannot be reached or refuses (407, a SOCKS
refusal) is a ``ProxyRefusal``: the fetch blames the proxy, not the site.

``http.client`` parses the status line, chunked and length-delimited bodies; the head
(at most 100 header lines of at most 64 KiB each, as ``http.client`` bounds them) is
read by ``HeadResponse`` straight into the ``HTTPHeaderDict`` the response keeps,
without the ``email`` package, which ``http.client`` runs for it and which cost
about a fifth of a fetch's CPU. urllib3 was this layer before and cost about twice
the CPU per request for the same bounds.
"""

from __future__ import annotations

import base64
import http.client
import os
import re
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, NamedTuple, TypeVar
from urllib.parse import unquote, urlsplit

import certifi
from urllib3 import HTTPHeaderDict

from external_interface.clients import PROXY_PORTS
from external_interface.url_guard import UrlGuard

MAX_ROUTES = 256  # routes with idle connections kept at once; the oldest route's are closed
MAX_IDLE = 32  # idle connections kept per route
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})  # a Content-Length even when empty
MAX_HEAD_LINE = 65_536  # http.client's bounds on a response's head
MAX_HEAD_LINES = 100
FIELD_NAME = re.compile(r"[!-9;-~]+")  # visible ASCII but ':' (RFC 9110 allows less)
_running: ContextVar[Deadline | None] = ContextVar("crawlchain_fetch_deadline", default=None)


class Deadline:
    """A fetch's wall-clock bound; ``with Deadline(s):`` makes the sockets obey it."""

    __slots__ = ("_token", "at", "started")

    def __init__(self, seconds: float) -> None:
        self.started = time.monotonic()
        self.at = self.started + seconds

    def left(self) -> float:
        return self.at - time.monotonic()

    @property
    def passed(self) -> bool:
        return time.monotonic() >= self.at

    def __enter__(self) -> Deadline:
        self._token: Token[Deadline | None] = _running.set(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _running.reset(self._token)


def _shorten(sock: socket.socket, wanted: float | None) -> None:
    """Lower ``sock``'s timeout to the running deadline; TimeoutError once it has passed."""
    socket.socket.settimeout(sock, _bound(wanted))


def _bound(wanted: float | None) -> float | None:
    """The smaller of ``wanted`` and the running deadline's time left (None: no bound);
    TimeoutError once the deadline has passed."""
    deadline = _running.get()
    if deadline is None:
        return wanted
    left = deadline.at - time.monotonic()
    if left <= 0:
        raise TimeoutError("fetch deadline passed")
    return left if wanted is None or left < wanted else wanted


_TIMEVAL = struct.Struct("@ll")
_T = TypeVar("_T")


class DeadlineSocket(socket.socket):
    """A plain socket whose blocking calls end by the running fetch's deadline.

    ``wanted`` is the timeout last asked for (connect or read timeout); each
    call gets the smaller of it and the time left. The socket stays in blocking mode
    and the kernel enforces the bound (``SO_RCVTIMEO``/``SO_SNDTIMEO``): a Python
    timeout would add a ``poll`` before every call, and with it one more hand-off of
    the GIL between the threads that fetch. The kernel's bound is set again only when it
    changes: while the read timeout is shorter than the time left (most of a fetch),
    every call has the same bound, and a ``setsockopt`` per call was a tenth of the
    fetch's system time.
    """

    wanted: float | None = None
    _kernel: tuple[int | None, int | None] = (None, None)  # SO_RCVTIMEO, SO_SNDTIMEO set

    def settimeout(self, value: float | None) -> None:
        self.wanted = value
        super().settimeout(None)

    def gettimeout(self) -> float | None:
        return self.wanted  # what a TLS wrap of this socket starts from

    def _bounded(self, option: int, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        bound = _bound(self.wanted)
        micros = 0 if bound is None else max(1, int(bound * 1_000_000))  # 0 blocks forever
        receive, send = self._kernel
        if micros != (receive if option == socket.SO_RCVTIMEO else send):
            self.setsockopt(socket.SOL_SOCKET, option, _TIMEVAL.pack(*divmod(micros, 1_000_000)))
            self._kernel = (micros, send) if option == socket.SO_RCVTIMEO else (receive, micros)
        try:
            return call(*args, **kwargs)
        except BlockingIOError as exc:  # the kernel's bound ran out
            raise TimeoutError("timed out") from exc

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        return self._bounded(socket.SO_RCVTIMEO, super().recv_into, *args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        return self._bounded(socket.SO_RCVTIMEO, super().recv, *args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> int:
        return self._bounded(socket.SO_SNDTIMEO, super().send, *args, **kwargs)

    def sendall(self, data: Any, flags: int = 0) -> None:
        """``send`` until all is sent, each call bounded by the time left: the kernel's
        bound covers one call, so a peer that reads slowly cannot stretch the whole."""
        view = memoryview(data).cast("B")
        while view:
            view = view[self.send(view, flags):]


class DeadlineSSLSocket(ssl.SSLSocket):
    """The TLS form, made by the client's SSL context. It keeps Python's timeouts
    (a TLS record may need several reads), lowered to the time left before each call,
    the handshake included."""

    wanted: float | None = None

    def settimeout(self, value: float | None) -> None:
        self.wanted = value
        super().settimeout(value)

    def do_handshake(self, *args: Any, **kwargs: Any) -> None:
        _shorten(self, self.wanted)
        super().do_handshake(*args, **kwargs)

    def recv_into(self, *args: Any, **kwargs: Any) -> int:
        _shorten(self, self.wanted)
        return super().recv_into(*args, **kwargs)

    def recv(self, *args: Any, **kwargs: Any) -> bytes:
        _shorten(self, self.wanted)
        return super().recv(*args, **kwargs)

    def send(self, *args: Any, **kwargs: Any) -> int:
        _shorten(self, self.wanted)
        return super().send(*args, **kwargs)

    def sendall(self, *args: Any, **kwargs: Any) -> None:
        _shorten(self, self.wanted)
        super().sendall(*args, **kwargs)


class TlsContext:
    """The SSL context of one client's connections, built at first use (loading CAs takes
    ms). Certificates are checked against ``ca_file`` (a PEM bundle: a company's CA, a
    test's) or else certifi's bundle, as ``requests`` checks them."""

    def __init__(self, ca_file: str | None = None) -> None:
        self.ca_file = ca_file
        self._built: ssl.SSLContext | None = None

    def get(self) -> ssl.SSLContext:
        if self._built is None:
            context = ssl.create_default_context(cafile=self.ca_file or certifi.where())
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.sslsocket_class = DeadlineSSLSocket
            self._built = context
        return self._built


class ConnectError(OSError):
    """No connection could be made (refused, unreachable, no address)."""


class ConnectTimeout(ConnectError):
    """The connection was not made in time (the connect timeout, or the deadline)."""


class ProxyRefusal(OSError):
    """The proxy did not carry the request: it could not be reached, or it refused the
    credentials, the tunnel or the destination (``status``: its HTTP status, if it gave
    one). Another proxy may serve it: the fetch blames this one."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def open_socket(host: str, port: int, timeout: float | None, read_timeout: float | None,
                guard: UrlGuard | None = None) -> DeadlineSocket:
    """A ``DeadlineSocket`` connected to ``host`` within the deadline; with a guard, to one
    of the addresses it allowed when it resolved ``host`` (once: no second lookup)."""
    error: OSError = ConnectError(f"no address to connect to for {host}")
    for address in _addresses(host, port, guard):
        try:
            sock = socket.create_connection((address, port), _connect_bound(timeout))
        except TimeoutError as exc:
            error = ConnectTimeout(f"connection to {host} timed out")
            error.__cause__ = exc
            continue
        except OSError as exc:
            error = ConnectError(f"Failed to establish a new connection: {exc}")
            continue
        return _bounded(sock, read_timeout)
    raise error


def _addresses(host: str, port: int, guard: UrlGuard | None) -> list[str]:
    """Where to connect for ``host``: itself (the system resolves it), or the guard's
    allowed addresses (``UnsafeURL`` when it allows none)."""
    if guard is None:
        return [host]
    try:
        return [sockaddr[0] for _, sockaddr in guard.addresses(host, port)]
    except socket.gaierror as exc:
        raise ConnectError(f"cannot resolve {host}: {exc}") from exc


def _bounded(sock: socket.socket, read_timeout: float | None) -> DeadlineSocket:
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    bounded = DeadlineSocket(sock.family, sock.type, sock.proto, sock.detach())
    bounded.settimeout(read_timeout)
    return bounded


def _connect_bound(timeout: float | None) -> float | None:
    """The connect timeout, lowered to the running deadline (``ConnectError`` if none left)."""
    try:
        return _bound(timeout)
    except TimeoutError as exc:
        raise ConnectTimeout("fetch deadline passed before connecting") from exc


def _deadline_passed() -> bool:
    deadline = _running.get()
    return deadline is not None and deadline.passed


def proxy_socket(proxy: Proxy, timeout: float | None,
                 read_timeout: float | None) -> DeadlineSocket:
    """A socket to the proxy itself (configuration: never guarded); ``ProxyRefusal``
    when it cannot be reached, unless the fetch's deadline is what ran out."""
    try:
        return open_socket(proxy.host, proxy.port, timeout, read_timeout)
    except ConnectError as exc:
        if _deadline_passed():
            raise
        raise ProxyRefusal(f"proxy {proxy.host}:{proxy.port} unreachable: {exc}") from exc


_SOCKS_TARGET_DOWN = frozenset({1, 3, 4, 5, 6})  # failure, net/host unreachable, refused, TTL


def socks_socket(proxy: Proxy, host: str, port: int, timeout: float | None,
                 read_timeout: float | None, guard: UrlGuard | None) -> DeadlineSocket:
    """A socket to ``host`` through a SOCKS5 proxy (python-socks), within the deadline.

    ``socks5://`` resolves here and hands the proxy an address: the guard's checked one,
    as on a direct connection. ``socks5h://`` hands the proxy the name, which it
    resolves: the guard has only checked the URL (``UrlGuard.check_url``), as for an
    http proxy. A destination the proxy cannot reach is a ``ConnectError``; a proxy
    unreachable, or refusing the credentials or the request, a ``ProxyRefusal``."""
    from python_socks import ProxyConnectionError, ProxyError, ProxyTimeoutError, ProxyType
    from python_socks.sync import Proxy as Socks

    remote = proxy.scheme == "socks5h"
    socks = Socks(ProxyType.SOCKS5, proxy.host, proxy.port, proxy.username, proxy.password,
                  rdns=remote)
    error: OSError = ConnectError(f"no address to connect to for {host}")
    for address in [host] if remote else _addresses(host, port, guard):
        try:
            sock = socks.connect(address, port, timeout=_connect_bound(timeout))
        except ProxyConnectionError as exc:
            raise ProxyRefusal(f"proxy {proxy.host}:{proxy.port} unreachable: {exc}") from exc
        except ProxyTimeoutError as exc:
            error = ConnectTimeout(f"connection to {host} through the proxy timed out")
            error.__cause__ = exc
            continue
        except ProxyError as exc:
            if exc.error_code not in _SOCKS_TARGET_DOWN:
                raise ProxyRefusal(f"proxy {proxy.host}:{proxy.port} refused: {exc}") from exc
            error = ConnectError(f"the proxy could not reach {host}: {exc}")
            continue
        return _bounded(sock, read_timeout)
    raise error


def tunnel(sock: socket.socket, host: str, port: int, headers: dict[str, str]) -> None:
    """Ask an http proxy for a CONNECT tunnel to ``host:port`` on ``sock``; a 407 is a
    ``ProxyRefusal``, another refusal an ``OSError`` (the proxy may not reach the site).
    The answer is read unbuffered, so not a byte of the tunnel is taken."""
    authority = f"[{host}]" if ":" in host else host
    lines = [f"CONNECT {authority}:{port} HTTP/1.1", f"Host: {authority}:{port}",
             *(f"{name}: {value}" for name, value in headers.items())]
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1"))
    reader = sock.makefile("rb", buffering=0)
    try:
        _, status, reason = read_status(reader)
        read_head(reader)
    finally:
        reader.close()
    if status == 407:
        raise ProxyRefusal(f"proxy refused the tunnel: 407 {reason.strip()}", status)
    if not 200 <= status < 300:
        raise OSError(f"Tunnel connection failed: {status} {reason.strip()}")


class HeadResponse(http.client.HTTPResponse):
    """``http.client``'s response, its head read here instead of by the ``email`` package:
    ``headers`` is an ``HTTPHeaderDict`` (any case; repeated fields joined by ``get``,
    apart by ``getlist``) and ``defects`` says what made the head untrustworthy.

    Why ``begin`` is overridden, and what of ``HTTPResponse`` it touches: ``begin`` is the
    one place between the status line and the body, and no public API hands
    ``HTTPResponse`` a head parsed elsewhere, while its body reading (``read1``, chunked
    framing, length accounting) is what this transport keeps it for. So ``begin`` reads
    the status line and the head from ``fp`` (the response's reader of the socket, which
    the body reading uses too: it cannot be replaced without writing the chunked framing
    by hand) and sets the framing state the body reading obeys (``chunked``,
    ``chunk_left``, ``length``, ``will_close``) as CPython 3.11 to 3.13 set it: by the
    first Transfer-Encoding and Content-Length, as ``email`` answered them. The status
    line and the keep-alive rule are this class's own, and whether the request was a
    HEAD (no body, whatever the head says) is its class (``BodilessResponse``); no
    private member of http.client is read or called.
    """

    head: HTTPHeaderDict  # also as ``headers`` and ``msg``, where http.client reads them
    defects: list[str]
    bodiless = False  # the answer to a HEAD request

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:
            version, status, reason = read_status(self.fp)
            if status != http.client.CONTINUE:
                break
            read_head(self.fp)  # a 100 Continue's head: skipped
        self.code = self.status = status
        self.reason = reason.strip()
        if version in ("HTTP/1.0", "HTTP/0.9"):
            self.version = 10
        elif version.startswith("HTTP/1."):
            self.version = 11
        else:
            raise http.client.UnknownProtocol(version)
        fields, self.defects = read_head(self.fp)
        self.head = HTTPHeaderDict()
        self.headers = self.msg = self.head
        first: dict[str, str] = {}
        for name, value in fields:
            self.head.add(name, value)
            first.setdefault(name.lower(), value)
        encoding = first.get("transfer-encoding")
        self.chunked = bool(encoding) and encoding.lower() == "chunked"
        self.chunk_left = None
        self.will_close = _closes(self.version, first)
        self.length = _length(first.get("content-length")) if not self.chunked else None
        if (status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
                or 100 <= status < 200 or self.bodiless):
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


class BodilessResponse(HeadResponse):
    """The answer to a HEAD request: its head only."""

    bodiless = True


def read_status(fp: Any) -> tuple[str, int, str]:
    """A response's status line (version, status, reason), read as ``http.client`` reads
    it: ``LineTooLong``, ``RemoteDisconnected`` for nothing at all, ``BadStatusLine``."""
    line = str(fp.readline(MAX_HEAD_LINE + 1), "iso-8859-1")
    if len(line) > MAX_HEAD_LINE:
        raise http.client.LineTooLong("status line")
    if not line:
        raise http.client.RemoteDisconnected("Remote end closed connection without response")
    version, status, reason = [*line.split(None, 2), "", ""][:3]
    if not version.startswith("HTTP/") or not status.isdigit() or not 100 <= int(status) <= 999:
        raise http.client.BadStatusLine(line)
    return version, int(status), reason


def _closes(version: int, first: dict[str, str]) -> bool:
    """Whether the server closes the connection after this response: HTTP/1.1 keeps it
    unless ``Connection: close``; HTTP/1.0 closes it unless it says keep-alive."""
    connection = (first.get("connection") or "").lower()
    if version == 11:
        return "close" in connection
    return not (first.get("keep-alive") or "keep-alive" in connection
                or "keep-alive" in (first.get("proxy-connection") or "").lower())


def read_head(fp: Any) -> tuple[list[tuple[str, str]], list[str]]:
    """The header fields of a response's head, up to its blank line, and its defects.

    Bounded as ``http.client`` bounds a head (``LineTooLong``, more than 100 lines).
    Values are trimmed; an obsolete line folding joins its line with a space, and a bare
    CR is a space (RFC 9112 allows both). A defect is a line that is no field (no colon,
    a name with spaces or controls) or a folding with nothing to fold onto: ``fetch``
    refuses such a head, as it refused the ``email`` package's defects.
    """
    fields: list[tuple[str, str]] = []
    defects: list[str] = []
    for count in range(MAX_HEAD_LINES + 1):
        raw = fp.readline(MAX_HEAD_LINE + 1)
        if len(raw) > MAX_HEAD_LINE:
            raise http.client.LineTooLong("header line")
        if raw in (b"\r\n", b"\n", b""):
            return fields, defects
        if count == MAX_HEAD_LINES:
            break
        line = raw.decode("iso-8859-1").rstrip("\r\n").replace("\r", " ")
        if line[:1] in (" ", "\t"):
            if fields:
                name, value = fields[-1]
                fields[-1] = (name, " ".join(filter(None, (value, line.strip(" \t")))))
            else:
                defects.append(f"the head starts with a folded line: {line[:60]!r}")
            continue
        name, colon, value = line.partition(":")
        if not colon or not FIELD_NAME.fullmatch(name):
            defects.append(f"not a header field: {line[:60]!r}")
            continue
        fields.append((name, value.strip(" \t")))
    raise http.client.HTTPException(f"got more than {MAX_HEAD_LINES} headers")


def _length(declared: str | None) -> int | None:
    """Content-Length as ``http.client`` reads it: None when absent, bad or negative."""
    try:
        length = int(declared) if declared else None
    except ValueError:
        return None
    return None if length is None or length < 0 else length


class BoundedHTTPConnection(http.client.HTTPConnection):
    """An ``http.client`` connection to ``host:port`` whose ``connect`` (its documented
    hook) opens a ``DeadlineSocket`` within the deadline: directly through the guard,
    through a SOCKS5 proxy, or to an http proxy (a CONNECT tunnel for https, the
    requests themselves in absolute form for http); then TLS for https."""

    response_class = HeadResponse

    def __init__(self, host: str, port: int, *, timeout: float | None,
                 read_timeout: float | None, guard: UrlGuard | None = None,
                 tls: TlsContext | None = None, https: bool = False,
                 via: Proxy | None = None) -> None:
        super().__init__(host, port, timeout=timeout)
        self.origin = (host, port)
        self.connect_timeout, self.read_timeout = timeout, read_timeout
        self.guard, self.tls, self.https, self.via = guard, tls, https, via

    def connect(self) -> None:
        (host, port), via = self.origin, self.via
        if via is None:
            sock: socket.socket = open_socket(host, port, self.connect_timeout,
                                              self.read_timeout, self.guard)
        elif not via.forwards:
            sock = socks_socket(via, host, port, self.connect_timeout, self.read_timeout,
                                self.guard)
        else:
            sock = proxy_socket(via, self.connect_timeout, self.read_timeout)
            if via.scheme == "https":
                sock = self._wrap(sock, via.host)
            if self.https:
                tunnel(sock, host, port, via.headers)
        self.sock = self._wrap(sock, host) if self.https else sock

    def _wrap(self, sock: socket.socket, server: str) -> ssl.SSLSocket:
        assert self.tls is not None  # an https connection has its context
        return self.tls.get().wrap_socket(sock, server_hostname=server)


class Route(NamedTuple):
    """Where a request goes: its origin, and the proxy it goes through (None: direct).
    A tuple: built and hashed once per fetch, at a tuple's cost."""

    scheme: str
    host: str
    port: int
    proxy: str | None = None


@dataclass(frozen=True)
class Proxy:
    """A proxy URL parsed once: where to connect, its credentials (as a header for an http
    proxy), and how it carries requests."""

    scheme: str  # http, https, socks5 (resolved here) or socks5h (resolved by the proxy)
    host: str
    port: int
    headers: dict[str, str] = field(default_factory=dict)
    username: str | None = None
    password: str | None = None

    @property
    def forwards(self) -> bool:
        """An http(s) proxy: http requests go to it in absolute form, https through a
        CONNECT tunnel; a SOCKS proxy tunnels every connection."""
        return self.scheme in ("http", "https")

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """``http(s)://user:pw@host:port`` or ``socks5(h)://...``; ``ValueError``
        (credentials never shown)."""
        try:
            parts = urlsplit(url)
            scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        except ValueError:
            raise ValueError("proxy URL is malformed") from None
        if scheme not in PROXY_PORTS:
            raise ValueError(f"proxy scheme {scheme or '(none)'!r} is not one of "
                             f"{', '.join(PROXY_PORTS)}")
        if not host:
            raise ValueError("proxy URL has no host")
        username = unquote(parts.username) if parts.username is not None else None
        password = unquote(parts.password or "") if username is not None else None
        headers = {}
        if username is not None and scheme in ("http", "https"):
            token = base64.b64encode(f"{username}:{password}".encode("latin-1")).decode()
            headers["Proxy-Authorization"] = f"Basic {token}"
        return cls(scheme, host, port or PROXY_PORTS[scheme], headers, username, password)


class Exchange:
    """A request sent and its response's head read; the body is read by the caller
    (``read1``), then the connection given back with ``release``."""

    def __init__(self, transport: Transport, route: Route,
                 connection: http.client.HTTPConnection,
                 response: HeadResponse) -> None:
        self.transport, self.route = transport, route
        self.connection, self.response = connection, response
        self.status = response.status
        self.headers = response.head
        self.defects = response.defects

    @property
    def length_remaining(self) -> int | None:
        """Body bytes still due by Content-Length (None: not length-delimited)."""
        return self.response.length

    def read1(self, amount: int) -> bytes:
        return self.response.read1(amount)

    def release(self) -> None:
        """Keep the connection for the route's next request if the body was read to its
        end and the server keeps it open; close it otherwise."""
        response = self.response
        if response.length == 0 and not response.isclosed():
            response.read()  # read1 leaves a drained length-delimited body open: finish it
        if response.isclosed() and not response.will_close:
            self.transport.keep(self.route, self.connection)
        else:
            response.close()
            self.connection.close()


class Transport:
    """One fetcher's kept-alive connections, per process (see the module docstring)."""

    def __init__(self, guard: UrlGuard | None = None, connect_timeout: float | None = None,
                 read_timeout: float | None = None, ca_file: str | None = None) -> None:
        self.guard = guard
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._lock = threading.Lock()
        self._tls = TlsContext(ca_file)
        self._pid = os.getpid()
        self._idle: dict[Route, list[http.client.HTTPConnection]] = {}
        self._proxies: dict[str, Proxy] = {}

    def send(self, route: Route, method: str, target: str, headers: dict[str, str],
             body: bytes | None) -> Exchange:
        """Send the request and read the response's head. An idle connection the server
        had closed is replaced once for a method safe to repeat; every error is the
        standard library's (``OSError``, ``http.client.HTTPException``, ``ValueError``)."""
        connection, reused = self._connection(route)
        try:
            return self._exchange(route, connection, method, target, headers, body)
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError,
                ConnectionAbortedError):
            connection.close()
            if not reused or method not in IDEMPOTENT:
                raise
        connection = self._open(route)
        try:
            return self._exchange(route, connection, method, target, headers, body)
        except BaseException:
            connection.close()
            raise

    def _exchange(self, route: Route, connection: http.client.HTTPConnection, method: str,
                  target: str, headers: dict[str, str], body: bytes | None) -> Exchange:
        try:
            names = {name.lower() for name in headers}
            connection.putrequest(method, target, skip_host="host" in names,
                                  skip_accept_encoding=True)
            for name, value in headers.items():
                connection.putheader(name, value)
            if "content-length" not in names and "transfer-encoding" not in names and (
                    body is not None or method in _BODY_METHODS):
                connection.putheader("Content-Length", str(len(body or b"")))
            connection.endheaders(body)
            if method == "HEAD":  # the one request whose answer has no body: its class says
                connection.response_class = BodilessResponse
                response = connection.getresponse()
                del connection.response_class  # the class's own again, for the next request
            else:
                response = connection.getresponse()
            assert isinstance(response, HeadResponse)  # the connections' response_class
            return Exchange(self, route, connection, response)
        except BaseException:
            connection.close()
            raise

    def proxy(self, url: str) -> Proxy:
        """The parsed proxy (``ValueError`` when malformed), parsed once per URL."""
        found = self._proxies.get(url)
        if found is None:
            found = self._proxies[url] = Proxy.parse(url)
            if len(self._proxies) > MAX_ROUTES:
                self._proxies.pop(next(iter(self._proxies)))
        return found

    def keep(self, route: Route, connection: http.client.HTTPConnection) -> None:
        """Put a connection whose exchange is over back among its route's idle ones."""
        with self._lock:
            if self._pid != os.getpid():
                connection.close()
                return
            idle = self._idle.setdefault(route, [])
            kept = len(idle) < MAX_IDLE
            if kept:
                idle.append(connection)
            dropped = self._idle.pop(next(iter(self._idle))) if len(self._idle) > MAX_ROUTES \
                else []
        for old in dropped if kept else [*dropped, connection]:
            old.close()

    def _connection(self, route: Route) -> tuple[http.client.HTTPConnection, bool]:
        """An idle connection of the route (True), or a new one (False)."""
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent's sockets are not ours
                self._pid, self._idle = os.getpid(), {}
            idle = self._idle.get(route)
            if idle:
                return idle.pop(), True
        return self._open(route), False

    def _open(self, route: Route) -> http.client.HTTPConnection:
        """A new, not yet connected connection for the route (it connects on first send):
        guarded when it goes straight to the site or through a ``socks5://`` proxy."""
        if not route.host:
            raise ValueError("URL has no host")
        proxy = self.proxy(route.proxy) if route.proxy is not None else None
        https = route.scheme == "https"
        if https and proxy is not None and proxy.scheme == "https":
            raise ValueError("an https site through an https proxy (TLS in TLS) is not "
                             "supported: use an http:// proxy URL")
        guard = self.guard if proxy is None or proxy.scheme == "socks5" else None
        return BoundedHTTPConnection(route.host, route.port, timeout=self.connect_timeout,
                                     read_timeout=self.read_timeout, guard=guard,
                                     tls=self._tls, https=https, via=proxy)

    def close(self) -> None:
        """Close every idle connection (this process's; a forked child's are not its own)."""
        with self._lock:
            idle, self._idle = (self._idle if self._pid == os.getpid() else {}), {}
        for connections in idle.values():
            for connection in connections:
                connection.close()
