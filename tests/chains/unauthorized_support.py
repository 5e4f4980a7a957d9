"""A loopback server that answers 401 to every request: a site behind a login the crawler
has no session for. robots.txt is a 404 (every path allowed)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread


class Unauthorized(ThreadingHTTPServer):
    """``base``: its URL; ``asked``: (path, Cookie header) of each request but robots.txt."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.base = f"http://127.0.0.1:{self.server_address[1]}"
        self.asked: list[tuple[str, str | None]] = []


class _Handler(BaseHTTPRequestHandler):
    server: Unauthorized

    def do_GET(self) -> None:
        if self.path == "/robots.txt":
            self.send_response(404)
        else:
            self.server.asked.append((self.path, self.headers.get("Cookie")))
            self.send_response(401)
            self.send_header("WWW-Authenticate", 'Basic realm="members"')
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: a test reads ``asked``, not a log."""


@contextmanager
def unauthorized_server() -> Iterator[Unauthorized]:
    server = Unauthorized()
    Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
