"""A loopback HTTP server with scripted routes that counts every request per path."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Route:
    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class Site(ThreadingHTTPServer):
    daemon_threads = True
    routes: dict[str, Route]
    hits: Counter[str]

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: object, client_address: object) -> None:
        """The fetcher hangs up on purpose (caps): not an error here."""


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Site

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self.server.hits[path] += 1
        route = self.server.routes.get(path, Route(404, b"not found"))
        time.sleep(route.delay_s)
        self.send_response(route.status)
        for name, value in route.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(route.body)))
        self.end_headers()
        self.wfile.write(route.body)


@contextmanager
def serve(routes: dict[str, Route]) -> Iterator[Site]:
    site = Site(("127.0.0.1", 0), Handler)
    site.routes, site.hits = routes, Counter()
    threading.Thread(target=site.serve_forever, daemon=True).start()
    try:
        yield site
    finally:
        site.shutdown()
        site.server_close()
