"""The socket layer under ``fetch``: a hard wall-clock deadline and the SSRF guard.

Socket timeouts bound each ``recv``, not a whole exchange: a server dripping
its status line and headers a byte every few seconds never trips them, and
``requests`` gives no hook between header lines. ``Deadline`` closes that gap:
every socket a fetch touches is registered with it, and when the deadline
passes a watchdog thread shuts those sockets down, so whatever phase is blocked (TLS
handshake, headers, body, a proxy's CONNECT) fails at once.

The registration and the guard live in urllib3 connection classes mounted by
``BoundedAdapter``. A guarded connection resolves its host once, keeps only the
addresses ``UrlGuard`` allows and connects to one of those, so the address
checked is the address connected to on every hop. Connections to a proxy are
watched but not guarded: the proxy is configuration, not page input.
"""

from __future__ import annotations

import contextlib
import heapq
import itertools
import os
import socket
import threading
import time
from contextvars import ContextVar
from types import TracebackType
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3 import PoolManager
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.exceptions import ConnectTimeoutError, NameResolutionError, NewConnectionError
from urllib3.poolmanager import ProxyManager
from urllib3.util.connection import create_connection

from external_interface.url_guard import UrlGuard

_current: ContextVar[Deadline | None] = ContextVar("crawlchain_fetch_deadline", default=None)


class Deadline:
    """A fetch's wall-clock bound; ``with Deadline(s, watchdog):`` arms it for this thread.

    Sockets are watched through a duplicate descriptor: ``shutdown`` acts on the
    shared socket (plain or TLS-wrapped, even mid-handshake) while closing the
    duplicate afterwards leaves the connection itself to urllib3.
    """

    def __init__(self, seconds: float, watchdog: Watchdog) -> None:
        self.at = time.monotonic() + seconds
        self.expired = False
        self.finished = False
        self._watchdog = watchdog
        self._watched: list[socket.socket] = []
        self._lock = threading.Lock()

    def left(self) -> float:
        return self.at - time.monotonic()

    def watch(self, sock: socket.socket) -> None:
        """Shut ``sock`` down when the deadline passes (at once if it has)."""
        try:
            dup = socket.fromfd(sock.fileno(), sock.family, sock.type)
        except OSError:
            return  # already closed: nothing left to bound
        with self._lock:
            self._watched.append(dup)
            if self.expired:
                _shutdown(dup)

    def expire(self) -> None:
        """Called by the watchdog: every watched socket is shut down, now and later."""
        with self._lock:
            if self.finished:
                return
            self.expired = True
            for sock in self._watched:
                _shutdown(sock)

    def __enter__(self) -> Deadline:
        self._token = _current.set(self)
        self._watchdog.arm(self)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _current.reset(self._token)
        with self._lock:
            self.finished = True
            for sock in self._watched:
                sock.close()
            self._watched.clear()


class Watchdog:
    """One daemon thread that expires deadlines as they pass.

    A timer thread per fetch costs about a millisecond to start; this one thread
    sleeps until the earliest armed deadline. It starts on first use and again
    in a forked child (threads do not survive ``fork``).
    """

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._armed: list[tuple[float, int, Deadline]] = []
        self._order = itertools.count()
        self._pid: int | None = None

    def arm(self, deadline: Deadline) -> None:
        with self._cond:
            if self._pid != os.getpid():
                self._pid = os.getpid()
                threading.Thread(target=self._run, name="fetch-watchdog", daemon=True).start()
            heapq.heappush(self._armed, (deadline.at, next(self._order), deadline))
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                while self._armed and (self._armed[0][0] <= now or self._armed[0][2].finished):
                    heapq.heappop(self._armed)[2].expire()
                self._cond.wait(self._armed[0][0] - now if self._armed else None)


def _shutdown(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already gone
        sock.shutdown(socket.SHUT_RDWR)


def _watch(sock: socket.socket | None) -> None:
    deadline = _current.get()
    if deadline is not None and sock is not None:
        deadline.watch(sock)


class _Bounded(HTTPConnection):
    """Registers its socket with the running fetch's deadline; connects through the guard."""

    def __init__(self, *args: Any, guard: UrlGuard | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.guard = guard

    def _new_conn(self) -> socket.socket:
        sock = self._guarded_conn() if self.guard is not None else super()._new_conn()
        _watch(sock)
        return sock

    def request(self, *args: Any, **kwargs: Any) -> None:
        _watch(self.sock)  # a kept-alive connection: its socket is new to this fetch
        super().request(*args, **kwargs)

    def _guarded_conn(self) -> socket.socket:
        """Resolve once, connect only to an address the guard allowed (urllib3's errors)."""
        assert self.guard is not None
        try:
            allowed = self.guard.addresses(self._dns_host, self.port)
        except socket.gaierror as exc:
            raise NameResolutionError(self.host, self, exc) from exc
        error: Exception = NewConnectionError(self, "no address to connect to")
        for _family, sockaddr in allowed:
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


class _PoolManager(PoolManager):
    """Hands the guard to every pool's connections (pool keys stay urllib3's own)."""

    def __init__(self, guard: UrlGuard | None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.guard = guard
        self.pool_classes_by_scheme = _POOLS

    def _new_pool(self, scheme: str, host: str, port: int,
                  request_context: dict[str, Any] | None = None) -> HTTPConnectionPool:
        pool = super()._new_pool(scheme, host, port, request_context)
        pool.conn_kw["guard"] = self.guard
        return pool


class BoundedAdapter(HTTPAdapter):
    """``HTTPAdapter`` whose connections obey the fetch deadline and, if given, the guard."""

    def __init__(self, guard: UrlGuard | None = None, **kwargs: Any) -> None:
        self.guard = guard  # before super(): it builds the pool manager
        super().__init__(**kwargs)

    def init_poolmanager(self, connections: int, maxsize: int, block: bool = False,
                         **pool_kwargs: Any) -> None:
        self._pool_connections, self._pool_maxsize, self._pool_block = connections, maxsize, block
        self.poolmanager = _PoolManager(self.guard, num_pools=connections, maxsize=maxsize,
                                        block=block, **pool_kwargs)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> PoolManager:
        """The stock proxy manager, with connections watched (never guarded) by the deadline."""
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if isinstance(manager, ProxyManager):
            manager.pool_classes_by_scheme = _POOLS
        return manager


class BoundedSession(requests.Session):
    """A ``requests.Session`` that never looks for a redirect itself.

    Even with ``allow_redirects=False``, ``Session.send`` computes the next hop
    of a 3xx by reading the whole redirect body, decoded and unbounded: a 302
    carrying a gzip bomb or dripping forever would blow the fetch bounds before
    the fetcher sees it. The fetcher follows redirects hop by hop, so here a
    response has no redirect target.
    """

    def get_redirect_target(self, resp: requests.Response) -> None:
        return None


def bounded_session(guard: UrlGuard | None = None) -> BoundedSession:
    """A keep-alive session whose every connection is bounded (and guarded, if asked)."""
    session = BoundedSession()
    mount_bounded(session, guard)
    session.trust_env = False  # proxies come from the proxy provider, not the environment
    return session


def mount_bounded(session: requests.Session, guard: UrlGuard | None) -> None:
    """Replace ``session``'s http/https adapters with bounded (and guarded) ones."""
    adapter = BoundedAdapter(guard, pool_connections=4, pool_maxsize=32, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
