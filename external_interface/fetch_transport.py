"""The connection layer under ``fetch``: kept-alive connections, a hard wall-clock deadline
and the SSRF guard, on ``http.client`` (the standard library's HTTP/1.1).

Socket timeouts bound each ``recv``, not a whole exchange: a server dripping
its status line and headers a byte every few seconds never trips them.
``Deadline`` closes that gap without a thread per fetch: every socket the
fetcher's pools open is a ``DeadlineSocket`` (a ``DeadlineSSLSocket`` once TLS
wraps it), which before each blocking call (``recv``, ``send``, the TLS
handshake) lowers its bound to the time left before the running fetch's
deadline, and refuses once none is left. A plain socket stays blocking and the
kernel holds the bound (``SO_RCVTIMEO``, ``SO_SNDTIMEO``; its ``sendall`` is a
loop of bounded sends); CPython bounds a whole TLS handshake and TLS record read
by the timeout they start with. So whatever phase is blocked (TLS handshake, a
proxy's CONNECT, status line, headers, body) ends by the deadline; a connect
gets the time left when it starts (a name's addresses are tried in turn, each try
within the time still left). The running deadline is a context variable, so
a kept-alive connection obeys whichever fetch is using it. Name resolution is the
one step no socket bounds.

A guarded connection resolves its host once, keeps only the addresses
``UrlGuard`` allows and connects to one of those, so the address checked is the
address connected to on every hop. Connections to a proxy obey the deadline but
are not guarded: the proxy is configuration, not page input.

``Transport`` keeps idle connections per route (scheme, host, port, proxy), built by
the fetcher in the process that uses them and again after a ``fork``, whose child
must not share the parent's sockets. A request goes out on an idle connection of its
route when there is one; one that the server closed while idle (it may, without
saying so) is replaced, once, for a request that is safe to repeat. Through a proxy,
an http request goes to the proxy in absolute form, an https one through a CONNECT
tunnel; the proxy's credentials become ``Proxy-Authorization`` and nothing else.

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

from external_interface.url_guard import UrlGuard

MAX_ROUTES = 256  # routes with idle connections kept at once; the oldest route's are closed
MAX_IDLE = 32  # idle connections kept per route
IDEMPOTENT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE", "TRACE"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})  # a Content-Length even when empty
MAX_HEAD_LINE = 65_536  # http.client's bounds on a response's head
MAX_HEAD_LINES = 100
_FIELD_NAME = re.compile(r"[!-9;-~]+")  # visible ASCII but ':' (RFC 9110 allows less)
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
    """The TLS form, made by the fetcher's SSL context. It keeps Python's timeouts
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
    """The SSL context of one fetcher's connections, built at first use (loading CAs takes
    ms). Certificates are checked against certifi's bundle, as ``requests`` checks them."""

    def __init__(self) -> None:
        self._context: ssl.SSLContext | None = None

    def get(self) -> ssl.SSLContext:
        if self._context is None:
            context = ssl.create_default_context(cafile=certifi.where())
            context.minimum_version = ssl.TLSVersion.TLSv1_2
            context.sslsocket_class = DeadlineSSLSocket
            self._context = context
        return self._context


class ConnectError(OSError):
    """No connection could be made (refused, unreachable, no address)."""


class ConnectTimeout(ConnectError):
    """The connection was not made in time (the connect timeout, or the deadline)."""


class _Bounded:
    """Opens a ``DeadlineSocket`` within the deadline, through the guard if it has one;
    http.client's ``connect`` calls it as ``_create_connection`` (a tunnel and TLS after)."""

    def __init__(self, *args: Any, guard: UrlGuard | None = None,
                 read_timeout: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = guard
        self.read_timeout = read_timeout
        self._create_connection = self._open_socket  # http.client sets its own per instance

    def _open_socket(self, address: tuple[str, int], timeout: float | None,
                     source_address: Any = None) -> socket.socket:
        host, port = address
        if self.guard is None:
            targets = [host]
        else:
            try:
                targets = [sockaddr[0] for _, sockaddr in self.guard.addresses(host, port)]
            except socket.gaierror as exc:
                raise ConnectError(f"cannot resolve {host}: {exc}") from exc
        error: OSError = ConnectError(f"no address to connect to for {host}")
        for target in targets:
            try:
                sock = socket.create_connection((target, port), _connect_bound(timeout))
            except TimeoutError as exc:
                error = ConnectTimeout(f"connection to {host} timed out")
                error.__cause__ = exc
                continue
            except OSError as exc:
                error = ConnectError(f"Failed to establish a new connection: {exc}")
                continue
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            bounded = DeadlineSocket(sock.family, sock.type, sock.proto, sock.detach())
            bounded.settimeout(self.read_timeout)
            return bounded
        raise error


def _connect_bound(timeout: float | None) -> float | None:
    """The connect timeout, lowered to the running deadline (``ConnectError`` if none left)."""
    try:
        return _bound(timeout)
    except TimeoutError as exc:
        raise ConnectTimeout("fetch deadline passed before connecting") from exc


class HeadResponse(http.client.HTTPResponse):
    """``http.client``'s response, its head read by ``read_head`` instead of the ``email``
    package: ``headers`` is an ``HTTPHeaderDict`` (any case; repeated fields joined by
    ``get``, apart by ``getlist``) and ``defects`` says what made the head untrustworthy.
    The rest is ``HTTPResponse.begin`` as CPython 3.11 to 3.13 write it: framing by the
    first Transfer-Encoding and Content-Length, as ``email`` answered them."""

    head: HTTPHeaderDict  # also as ``headers`` and ``msg``, where http.client reads them
    defects: list[str]

    def begin(self) -> None:
        if self.headers is not None:
            return
        while True:
            version, status, reason = self._read_status()
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
        self.will_close = self._check_close()
        self.length = _length(first.get("content-length")) if not self.chunked else None
        if (status in (http.client.NO_CONTENT, http.client.NOT_MODIFIED)
                or 100 <= status < 200 or self._method == "HEAD"):
            self.length = 0
        if not self.will_close and not self.chunked and self.length is None:
            self.will_close = True


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
        if not colon or not _FIELD_NAME.fullmatch(name):
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


class BoundedHTTPConnection(_Bounded, http.client.HTTPConnection):
    response_class = HeadResponse


class BoundedHTTPSConnection(_Bounded, http.client.HTTPSConnection):
    response_class = HeadResponse


class Route(NamedTuple):
    """Where a request goes: its origin, and the proxy it goes through (None: direct).
    A tuple: built and hashed once per fetch, at a tuple's cost."""

    scheme: str
    host: str
    port: int
    proxy: str | None = None


@dataclass(frozen=True)
class Proxy:
    """A proxy URL parsed once: where to connect, and its credentials as a header."""

    scheme: str
    host: str
    port: int
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def parse(cls, url: str) -> Proxy:
        """``http(s)://user:pw@host:port``; ``ValueError`` (credentials never shown)."""
        try:
            parts = urlsplit(url)
            scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
        except ValueError:
            raise ValueError("proxy URL is malformed") from None
        if scheme not in ("http", "https"):
            raise ValueError(f"proxy scheme {scheme or '(none)'!r} is not http/https")
        if not host:
            raise ValueError("proxy URL has no host")
        headers = {}
        if parts.username is not None:
            credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
            token = base64.b64encode(credentials.encode("latin-1")).decode()
            headers["Proxy-Authorization"] = f"Basic {token}"
        return cls(scheme, host, port or (443 if scheme == "https" else 80), headers)


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
                 read_timeout: float | None = None) -> None:
        self.guard = guard
        self.connect_timeout = connect_timeout
        self.read_timeout = read_timeout
        self._lock = threading.Lock()
        self._tls = TlsContext()
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
        """A new, not yet connected connection for the route (it connects on first send)."""
        if not route.host:
            raise ValueError("URL has no host")
        proxy = self.proxy(route.proxy) if route.proxy is not None else None
        connection: http.client.HTTPConnection
        if proxy is None:
            connection = self._new(route.scheme, route.host, route.port, self.guard)
        elif route.scheme == "http":  # absolute-form requests to the proxy itself
            connection = self._new(proxy.scheme, proxy.host, proxy.port)
        elif proxy.scheme == "http":  # a CONNECT tunnel, then TLS to the site
            connection = self._new("https", proxy.host, proxy.port)
            connection.set_tunnel(route.host, route.port, headers=proxy.headers)
        else:
            raise ValueError("an https site through an https proxy (TLS in TLS) is not "
                             "supported: use an http:// proxy URL")
        return connection

    def _new(self, scheme: str, host: str, port: int,
             guard: UrlGuard | None = None) -> http.client.HTTPConnection:
        """A connection to ``host``; guarded when ``guard`` is given (never a proxy's)."""
        if scheme == "https":
            return BoundedHTTPSConnection(host, port, timeout=self.connect_timeout,
                                          context=self._tls.get(), guard=guard,
                                          read_timeout=self.read_timeout)
        return BoundedHTTPConnection(host, port, timeout=self.connect_timeout, guard=guard,
                                     read_timeout=self.read_timeout)
