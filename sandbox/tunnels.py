"""Tunnelling proxies on loopback: SOCKS5 and HTTP CONNECT, each killable mid-crawl.

    proxy = Socks5Proxy(username="crawler", password="pw", exit="127.0.0.21")
    proxy.url               # socks5://crawler:pw@127.0.0.1:PORT (``url_for("socks5h")``)
    proxy.asked             # every destination asked for, as given: a name or an address
    proxy.kill()            # the listener and every open tunnel closed, as a dead proxy

``Socks5Proxy`` speaks RFC 1928 (CONNECT only) with no authentication or RFC 1929's
username and password; ``ConnectProxy`` answers HTTP CONNECT (``Proxy-Authorization:
Basic`` when it has credentials, else 407). Each opens its upstream connections from
its own source address when given ``exit`` (all of 127/8 is loopback on Linux), so a
site sees one client address per proxy, as with ``sandbox.exits``. Only loopback
destinations are carried: nothing through them reaches the internet. Every loop is
bounded: a tunnel ends when either side closes, after ``IDLE_S`` of silence, or at
``kill``.
"""

from __future__ import annotations

import base64
import contextlib
import ipaddress
import selectors
import socket
import struct
import threading
from types import TracebackType
from typing import Self

IDLE_S = 30.0
HANDSHAKE_S = 10.0
MAX_HEAD = 64 * 1024


class _Refused(Exception):
    """The client's request cannot be carried: ``code`` is the SOCKS reply or HTTP status."""

    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class TunnelProxy:
    """What both proxies share: the listener, the tunnels, the relay and the kill."""

    scheme = ""

    def __init__(self, username: str | None = None, password: str | None = None,
                 exit: str | None = None) -> None:
        self.username, self.password, self.exit = username, password, exit
        self.asked: list[tuple[str, int]] = []
        self.tunnels = 0  # tunnels opened so far
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.2)
        self.port = self._listener.getsockname()[1]
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return self.url_for(self.scheme)

    def url_for(self, scheme: str) -> str:
        credentials = f"{self.username}:{self.password}@" if self.username is not None else ""
        return f"{scheme}://{credentials}127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.kill()

    def kill(self) -> None:
        """Stop at once: no new connection is accepted, every open one is cut."""
        self._stop.set()
        self._listener.close()
        with self._lock:
            cut, self._open = list(self._open), set()
        for sock in cut:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
        self._thread.join(timeout=5)

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        if not self._track(conn):
            return
        upstream = None
        try:
            conn.settimeout(HANDSHAKE_S)
            host, port, early = self.handshake(conn)
            try:
                upstream = self._connect(host, port)
            except _Refused as refused:
                self.refuse(conn, refused.code)
                return
            self.granted(conn)
            if not self._track(upstream):
                return
            if early:
                upstream.sendall(early)
            self._relay(conn, upstream)
        except (_Refused, OSError, ValueError, struct.error):
            pass
        finally:
            for sock in (conn, upstream):
                if sock is not None:
                    self._untrack(sock)

    def handshake(self, conn: socket.socket) -> tuple[str, int, bytes]:
        """Read the client's request for a tunnel: (host, port, bytes already past it)."""
        raise NotImplementedError

    def granted(self, conn: socket.socket) -> None:
        raise NotImplementedError

    def refuse(self, conn: socket.socket, code: int) -> None:
        raise NotImplementedError

    def _connect(self, host: str, port: int) -> socket.socket:
        """A connection to ``host`` (its addresses tried in turn), loopback only."""
        with self._lock:
            self.asked.append((host, port))
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            raise _Refused(4) from None  # host unreachable
        refusal = _Refused(5)  # connection refused
        for *_, sockaddr in found:
            ip = ipaddress.ip_address(str(sockaddr[0]).split("%")[0])
            if not ip.is_loopback:
                refusal = _Refused(2)  # not allowed: loopback only
                continue
            source = (self.exit, 0) if self.exit and ip.version == 4 else None
            try:
                upstream = socket.create_connection((str(ip), port), HANDSHAKE_S, source)
            except OSError:
                continue
            self.tunnels += 1
            return upstream
        raise refusal

    def _relay(self, a: socket.socket, b: socket.socket) -> None:
        a.settimeout(None)
        b.settimeout(None)
        with selectors.DefaultSelector() as selector:
            selector.register(a, selectors.EVENT_READ, b)
            selector.register(b, selectors.EVENT_READ, a)
            while not self._stop.is_set():
                ready = selector.select(timeout=IDLE_S)
                if not ready:
                    return
                for key, _ in ready:
                    source: socket.socket = key.fileobj  # type: ignore[assignment]
                    data = source.recv(65536)
                    if not data:
                        return
                    key.data.sendall(data)

    def _track(self, sock: socket.socket) -> bool:
        with self._lock:
            if self._stop.is_set():
                sock.close()
                return False
            self._open.add(sock)
        return True

    def _untrack(self, sock: socket.socket) -> None:
        with self._lock:
            self._open.discard(sock)
        sock.close()


class Socks5Proxy(TunnelProxy):
    """RFC 1928's CONNECT, without authentication or with RFC 1929's user and password."""

    scheme = "socks5"

    def handshake(self, conn: socket.socket) -> tuple[str, int, bytes]:
        version, count = _exact(conn, 2)
        methods = _exact(conn, count)
        wanted = 2 if self.username is not None else 0
        if version != 5 or wanted not in methods:
            conn.sendall(b"\x05\xff")
            raise _Refused(0)
        conn.sendall(bytes([5, wanted]))
        if wanted == 2:
            _, size = _exact(conn, 2)
            user = _exact(conn, size).decode("latin-1")
            password = _exact(conn, _exact(conn, 1)[0]).decode("latin-1")
            if (user, password) != (self.username, self.password):
                conn.sendall(b"\x01\x01")
                raise _Refused(0)
            conn.sendall(b"\x01\x00")
        _, command, _, kind = _exact(conn, 4)
        if kind == 1:
            host = socket.inet_ntop(socket.AF_INET, _exact(conn, 4))
        elif kind == 4:
            host = socket.inet_ntop(socket.AF_INET6, _exact(conn, 16))
        elif kind == 3:
            host = _exact(conn, _exact(conn, 1)[0]).decode("latin-1")
        else:
            self.refuse(conn, 8)
            raise _Refused(8)
        (port,) = struct.unpack(">H", _exact(conn, 2))
        if command != 1:
            self.refuse(conn, 7)
            raise _Refused(7)
        return host, port, b""

    def granted(self, conn: socket.socket) -> None:
        conn.sendall(b"\x05\x00\x00\x01" + bytes(4) + b"\x00\x00")

    def refuse(self, conn: socket.socket, code: int) -> None:
        conn.sendall(bytes([5, code, 0, 1]) + bytes(6))


class ConnectProxy(TunnelProxy):
    """HTTP CONNECT only (an https site's tunnel): 407 without the right credentials."""

    scheme = "http"

    def handshake(self, conn: socket.socket) -> tuple[str, int, bytes]:
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(4096)
            if not chunk or len(data) > MAX_HEAD:
                raise _Refused(400)
            data += chunk
        head, _, early = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        method, authority, _ = [*lines[0].split(" "), "", ""][:3]
        fields = {k.strip().lower(): v.strip() for k, _, v in (x.partition(":") for x in lines[1:])}
        if self.username is not None:
            token = base64.b64encode(f"{self.username}:{self.password}".encode()).decode()
            if fields.get("proxy-authorization") != f"Basic {token}":
                self.refuse(conn, 407)
                raise _Refused(407)
        host, _, port = authority.rpartition(":")
        if method != "CONNECT" or not port.isdigit():
            self.refuse(conn, 405)
            raise _Refused(405)
        return host.strip("[]"), int(port), early

    def granted(self, conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")

    def refuse(self, conn: socket.socket, code: int) -> None:
        status = {2: 403, 4: 502, 5: 502}.get(code, code)
        conn.sendall(f"HTTP/1.1 {status} Refused\r\nContent-Length: 0\r\n\r\n".encode())


def _exact(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise _Refused(0)
        data += chunk
    return data
