"""The socket layer under ``fetch``: pools, a hard wall-clock deadline and the SSRF guard.

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
gets the time left when it starts (urllib3 tries a name's addresses in turn, the
guard's loop shortens each try). The running deadline is a context variable, so
a kept-alive connection obeys whichever fetch is using it. Name resolution is the
one step no socket bounds.

A guarded connection resolves its host once, keeps only the addresses
``UrlGuard`` allows and connects to one of those, so the address checked is the
address connected to on every hop. Connections to a proxy obey the deadline but
are not guarded: the proxy is configuration, not page input.

``Transport`` holds the pools (its own for direct requests, a ``ProxyManager``
per proxy URL), built by the fetcher in the process that uses them and again
after a ``fork``, whose child must not share the parent's sockets.
"""

from __future__ import annotations

import os
import socket
import ssl
import struct
import threading
import time
from collections.abc import Callable
from contextvars import ContextVar, Token
from types import TracebackType
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

import certifi
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import (
    ConnectTimeoutError,
    LocationValueError,
    NameResolutionError,
    NewConnectionError,
)
from urllib3.poolmanager import ProxyManager
from urllib3.util import make_headers
from urllib3.util.connection import create_connection
from urllib3.util.ssl_ import create_urllib3_context

from external_interface.url_guard import UrlGuard

MAX_POOLS = 256  # hosts (per proxy) kept alive at once; the oldest pool is dropped first
MAX_IDLE = 32  # idle connections kept per pool
PROXY_MANAGERS = 128  # proxies kept alive at once; the oldest is closed first
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

    ``wanted`` is the timeout urllib3 last asked for (connect or read timeout); each
    call gets the smaller of it and the time left. The socket stays in blocking mode
    and the kernel enforces the bound (``SO_RCVTIMEO``/``SO_SNDTIMEO``): a Python
    timeout would add a ``poll`` before every call, and with it one more hand-off of
    the GIL between the threads that fetch.
    """

    wanted: float | None = None

    def settimeout(self, value: float | None) -> None:
        self.wanted = value
        super().settimeout(None)

    def gettimeout(self) -> float | None:
        return self.wanted  # what a TLS wrap of this socket starts from

    def _bounded(self, option: int, call: Callable[..., _T], *args: Any, **kwargs: Any) -> _T:
        bound = _bound(self.wanted)
        micros = 0 if bound is None else max(1, int(bound * 1_000_000))  # 0 blocks forever
        self.setsockopt(socket.SOL_SOCKET, option, _TIMEVAL.pack(*divmod(micros, 1_000_000)))
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
    """The SSL context of one fetcher's pools, built at first use (loading CAs takes ms).

    Certificates are checked against certifi's bundle, as ``requests`` checks them.
    """

    def __init__(self) -> None:
        self._context: ssl.SSLContext | None = None

    def get(self) -> ssl.SSLContext:
        if self._context is None:
            context = create_urllib3_context()
            context.load_verify_locations(certifi.where())
            context.sslsocket_class = DeadlineSSLSocket
            self._context = context
        return self._context


class _Bounded(HTTPConnection):
    """Opens a ``DeadlineSocket``, within the deadline, through the guard if it has one."""

    def __init__(self, *args: Any, guard: UrlGuard | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = guard

    def _new_conn(self) -> socket.socket:
        self._within_deadline()
        sock = self._guarded_conn() if self.guard is not None else super()._new_conn()
        timeout = sock.gettimeout()
        bounded = DeadlineSocket(sock.family, sock.type, sock.proto, sock.detach())
        bounded.settimeout(timeout)
        return bounded

    def _within_deadline(self) -> None:
        """Lower the connect timeout to the time left (``ConnectTimeoutError`` if none is)."""
        deadline = _running.get()
        if deadline is None:
            return
        left = deadline.left()
        if left <= 0:
            raise ConnectTimeoutError(self, "fetch deadline passed before connecting")
        if not isinstance(self.timeout, (int, float)) or self.timeout > left:
            self.timeout = left

    def _guarded_conn(self) -> socket.socket:
        """Resolve once, connect only to an address the guard allowed (urllib3's errors)."""
        assert self.guard is not None
        try:
            allowed = self.guard.addresses(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        error: Exception = NewConnectionError(self, "no address to connect to")
        for _family, sockaddr in allowed:
            self._within_deadline()  # each address tried within the time still left
            try:
                return create_connection((sockaddr[0], self.port), self.timeout,
                                         source_address=self.source_address,
                                         socket_options=self.socket_options)
            except TimeoutError as exc:
                error = ConnectTimeoutError(self, f"connection to {self.host} timed out")
                error.__cause__ = exc
            except OSError as exc:
                error = NewConnectionError(self, f"Failed to establish a new connection: {exc}")
        raise error


class BoundedHTTPConnection(_Bounded, HTTPConnection):
    pass


class BoundedHTTPSConnection(_Bounded, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = BoundedHTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = BoundedHTTPSConnection


_POOLS: dict[str, type[HTTPConnectionPool]] = {"http": _HTTPPool, "https": _HTTPSPool}


class BoundedProxyManager(ProxyManager):
    """urllib3's proxy manager with bounded connections, never guarded."""

    def __init__(self, proxy_url: str, tls: TlsContext, **kwargs: Any) -> None:
        super().__init__(proxy_url, **kwargs)
        self.pool_classes_by_scheme = _POOLS
        self.tls = tls

    def _new_pool(self, scheme: str, host: str, port: int,
                  request_context: dict[str, Any] | None = None) -> HTTPConnectionPool:
        pool = super()._new_pool(scheme, host, port, request_context)
        if isinstance(pool, HTTPSConnectionPool):  # a tunnel to an https site
            pool.conn_kw["ssl_context"] = self.tls.get()
        return pool


PoolKey = tuple[str, str, int | None, str | None]  # scheme, host, port, proxy URL


class Transport:
    """One fetcher's connection pools, per process: its own pools for direct requests
    (guarded if asked) and a ``ProxyManager`` per proxy URL.

    Pools are remembered by ``(scheme, host, port, proxy)``; past ``MAX_POOLS`` the
    oldest is forgotten (a direct one closed), past ``PROXY_MANAGERS`` the oldest
    proxy with all its pools. urllib3's ``PoolManager`` would drop pools without
    closing them, and its lookup costs more than a request's own bookkeeping.
    """

    def __init__(self, guard: UrlGuard | None = None) -> None:
        self.guard = guard
        self._lock = threading.Lock()
        self._tls = TlsContext()
        self._pid = os.getpid()
        self._pools: dict[PoolKey, HTTPConnectionPool] = {}
        self._proxies: dict[str, ProxyManager] = {}

    def pool(self, scheme: str, host: str, port: int | None,
             proxy: str | None = None) -> HTTPConnectionPool:
        """The pool a request to ``scheme://host:port`` goes through (``ValueError``: bad
        host or proxy). Through a proxy, an http request goes to the proxy's pool in
        absolute form; an https one to a pool that tunnels with CONNECT."""
        if self._pid != os.getpid():  # a forked child: the parent's sockets are not ours
            self._pid, self._pools, self._proxies = os.getpid(), {}, {}
        key = (scheme, host, port, proxy)
        pool = self._pools.get(key)
        if pool is None:
            with self._lock:
                pool = self._pools.get(key) or self._add_pool(key)
        return pool

    def _add_pool(self, key: PoolKey) -> HTTPConnectionPool:
        scheme, host, port, proxy = key
        if not host:
            raise LocationValueError("URL has no host")
        if proxy is not None:
            manager = self._proxies.get(proxy) or self._add_proxy(proxy)
            pool = manager.connection_from_host(host, port, scheme)
        elif scheme == "https":
            pool = _HTTPSPool(host, port, maxsize=MAX_IDLE, guard=self.guard,
                              ssl_context=self._tls.get())
        else:
            pool = _HTTPPool(host, port, maxsize=MAX_IDLE, guard=self.guard)
        self._pools[key] = pool
        if len(self._pools) > MAX_POOLS:
            old_key = next(iter(self._pools))
            old = self._pools.pop(old_key)
            if old_key[3] is None:  # its manager may still hand out a proxied one
                old.close()
        return pool

    def _add_proxy(self, proxy: str) -> ProxyManager:
        manager = self._proxies[proxy] = proxy_manager(proxy, self._tls)
        if len(self._proxies) > PROXY_MANAGERS:
            old_proxy = next(iter(self._proxies))
            self._proxies.pop(old_proxy).clear()
            for key in [key for key in self._pools if key[3] == old_proxy]:
                self._pools.pop(key).close()
        return manager


def proxy_manager(proxy: str, tls: TlsContext) -> ProxyManager:
    """A manager for ``http(s)://user:pw@host:port``; the credentials become the
    Proxy-Authorization header and are kept nowhere else (``ValueError`` if malformed)."""
    parts = urlsplit(proxy)
    scheme, host, port = parts.scheme.lower(), parts.hostname, parts.port
    if scheme not in ("http", "https"):
        raise ValueError(f"proxy scheme {scheme or '(none)'!r} is not http/https")
    if not host:
        raise ValueError("proxy URL has no host")
    headers = {}
    if parts.username is not None:
        credentials = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
        headers["Proxy-Authorization"] = make_headers(
            proxy_basic_auth=credentials)["proxy-authorization"]
    netloc = (f"[{host}]" if ":" in host else host) + (f":{port}" if port else "")
    return BoundedProxyManager(f"{scheme}://{netloc}", tls, proxy_headers=headers,
                               proxy_ssl_context=tls.get() if scheme == "https" else None,
                               num_pools=MAX_POOLS, maxsize=MAX_IDLE)
