"""Test items and a tiny real HTTP sink on 127.0.0.1 that stores batches idempotently."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlsplit

from external_interface.storage import Item


class Post(Item):
    """A post of a site, keyed by site and post id."""

    collection: ClassVar[str] = "posts"
    key_fields: ClassVar[tuple[str, ...]] = ("site", "post_id")

    site: str
    post_id: int
    title: str
    tags: list[str] = []


class Comment(Item):
    """A second collection, to show that collections are kept apart."""

    collection: ClassVar[str] = "comments"
    key_fields: ClassVar[tuple[str, ...]] = ("comment_id",)

    comment_id: str
    text: str


def posts(*ids: int, title: str = "hello", site: str = "demo") -> list[Post]:
    """Posts with the given ids, all with one title."""
    return [Post(site=site, post_id=i, title=f"{title} {i}") for i in ids]


class Sink:
    """The sink's state: what it stored, what it was sent, and the faults to inject."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.records: dict[tuple[str, str], dict[str, Any]] = {}
        self.batches_stored: set[str] = set()
        self.posts_received: list[str] = []  # the Idempotency-Key of every POST
        self.fail_with: list[int] = []  # statuses to answer the next POSTs with, in order
        self.fail_always: int | None = None  # a status to answer every POST with
        self.retry_after: str | None = None
        self.readable = True

    def receive(self, header_key: str, body: dict[str, Any]) -> int:
        """Store a batch once per idempotency key; answer the injected faults first."""
        with self.lock:
            self.posts_received.append(header_key)
            if self.fail_always is not None:
                return self.fail_always
            if self.fail_with:
                return self.fail_with.pop(0)
            if header_key != body["idempotency_key"]:
                return 400
            if header_key not in self.batches_stored:
                self.batches_stored.add(header_key)
                for entry in body["items"]:
                    self._store(entry)
            return 200

    def records_of(self, collection: str) -> list[dict[str, Any]]:
        with self.lock:
            found = [r for (c, _), r in self.records.items() if c == collection]
        return sorted(found, key=lambda r: r["key"])

    def _store(self, entry: dict[str, Any]) -> None:
        """Upsert by (collection, key): first_seen kept, the rest replaced."""
        slot = (entry["collection"], entry["key"])
        earlier = self.records.get(slot)
        self.records[slot] = {
            "key": entry["key"],
            "data": entry["data"],
            "job_id": entry["job_id"],
            "first_seen": earlier["first_seen"] if earlier else entry["seen"],
            "last_seen": entry["seen"],
        }


class _SinkHandler(BaseHTTPRequestHandler):
    server: SinkHTTPServer

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        status = self.server.sink.receive(self.headers.get("Idempotency-Key", ""), body)
        headers = {}
        if status == 503 and self.server.sink.retry_after is not None:
            headers["Retry-After"] = self.server.sink.retry_after
        self._reply(status, {"ok": status == 200}, headers)

    def do_GET(self) -> None:
        if not self.server.sink.readable:
            self._reply(405, {"error": "write-only"})
            return
        collection = parse_qs(urlsplit(self.path).query)["collection"][0]
        self._reply(200, {"records": self.server.sink.records_of(collection)})

    def _reply(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests assert on the sink's state, not its log."""


class SinkHTTPServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _SinkHandler)
        self.sink = Sink()

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}/items"
