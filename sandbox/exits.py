"""Forward HTTP proxies on loopback, each with its own exit address.

Each ``ExitProxy`` listens on ``127.0.0.1:<port>`` and opens its upstream
connections from its own source address (``127.0.0.11``, ``127.0.0.12``, ...: all
of 127/8 is loopback on Linux), so the site sees a distinct client address per
proxy and can ban one exit while the others still work, as with real proxies.

Plain HTTP only (absolute-URI requests; no CONNECT), and only to loopback
targets: nothing a test or the demo does through them can reach the internet.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

FIRST_EXIT = "127.0.0.11"
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate",
                        "proxy-authorization", "proxy-connection", "te", "trailer",
                        "transfer-encoding", "upgrade", "content-length"})


def exit_address(index: int, first: str = FIRST_EXIT) -> str:
    """The source address of the ``index``-th exit: 127.0.0.11, 127.0.0.12, ..."""
    return str(ipaddress.IPv4Address(first) + index)


class ProxyHandler(BaseHTTPRequestHandler):
    """Forwards one client connection's requests over one upstream connection."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server: ExitProxy

    def setup(self) -> None:
        super().setup()
        self._upstream: tuple[str, int, http.client.HTTPConnection] | None = None

    def finish(self) -> None:
        super().finish()
        if self._upstream is not None:
            self._upstream[2].close()

    def do_GET(self) -> None:
        self._forward()

    def do_POST(self) -> None:
        self._forward()

    def _forward(self) -> None:
        target = urlsplit(self.path)
        if target.scheme != "http" or not _loopback(target.hostname or ""):
            self._refuse(403, b"this proxy only forwards http:// to loopback")
            return
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP_BY_HOP}
        path = target.path + (f"?{target.query}" if target.query else "")
        try:
            reply = self._send(target.hostname or "", target.port or 80, path, body, headers)
        except OSError:
            self._refuse(502, b"upstream unreachable")
            return
        self.send_response(reply.status)
        data = reply.read()
        for name, value in reply.getheaders():
            if name.lower() not in HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _send(self, host: str, port: int, path: str, body: bytes | None,
              headers: dict[str, str]) -> http.client.HTTPResponse:
        """Over the kept upstream connection; once more on a fresh one if it was dropped."""
        for fresh in (False, True):
            conn = self._connection(host, port, fresh)
            try:
                conn.request(self.command, path, body=body, headers=headers)
                return conn.getresponse()
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                if fresh:
                    raise
        raise AssertionError("unreachable")

    def _connection(self, host: str, port: int, fresh: bool) -> http.client.HTTPConnection:
        if self._upstream is not None and (self._upstream[:2] != (host, port) or fresh):
            self._upstream[2].close()
            self._upstream = None
        if self._upstream is None:
            conn = http.client.HTTPConnection(host, port, timeout=30,
                                              source_address=(self.server.exit_ip, 0))
            self._upstream = (host, port, conn)
        return self._upstream[2]

    def _refuse(self, status: int, message: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(message)))
        self.end_headers()
        self.wfile.write(message)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet, like the sandbox."""


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ExitProxy(ThreadingHTTPServer):
    """One proxy: listens on ``host:port`` (0 picks one), leaves from ``exit_ip``."""

    daemon_threads = True

    def __init__(self, exit_ip: str, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), ProxyHandler)
        self.exit_ip = exit_ip

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A crawler killed mid-request resets its connection: expected, not news."""
        if not isinstance(sys.exc_info()[1], (ConnectionError, socket.timeout)):
            super().handle_error(request, client_address)


class Exits:
    """Several exit proxies started together, stopped together."""

    def __init__(self, count: int, first_exit: str = FIRST_EXIT) -> None:
        self.proxies = [ExitProxy(exit_address(i, first_exit)) for i in range(count)]
        self._threads: list[threading.Thread] = []

    def start(self) -> Exits:
        for proxy in self.proxies:
            thread = threading.Thread(target=proxy.serve_forever, name=f"exit-{proxy.exit_ip}",
                                      daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def stop(self) -> None:
        for proxy in self.proxies:
            with suppress(OSError):
                if self._threads:  # shutdown() waits for a serve_forever that never ran
                    proxy.shutdown()
                proxy.server_close()

    @property
    def urls(self) -> list[str]:
        return [p.url for p in self.proxies]

    @property
    def addresses(self) -> list[str]:
        return [p.exit_ip for p in self.proxies]

    def write(self, path: Path) -> None:
        """The proxy URLs, one a line: what ``PROXY_FILE`` reads."""
        path.write_text("".join(f"{url}\n" for url in self.urls))


@contextmanager
def running_exits(count: int, first_exit: str = FIRST_EXIT) -> Iterator[Exits]:
    exits = Exits(count, first_exit).start()
    try:
        yield exits
    finally:
        exits.stop()
