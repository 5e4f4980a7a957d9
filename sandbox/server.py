"""The sandbox's HTTP server: a threaded stdlib server on loopback.

Routes (h5 = mobile web JSON/HTML, app = the app's article pages):

    GET /h5/feed?page=N                      JSON, paged articles with authors
    GET /h5/user/<uid>                       HTML profile
    GET /h5/user/<uid>/statuses?cursor=C     JSON, cursor-paged statuses
    GET /app/article/<aid>                   HTML article detail
    GET /api/comments?article_id=A&cursor=C  JSON, cursor-paged comments
"""

from __future__ import annotations

import base64
import html
import json
import re
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sandbox.world import World

Reply = tuple[int, str, bytes]  # status, content type, body


def encode_cursor(offset: int) -> str:
    return base64.urlsafe_b64encode(f"o:{offset}".encode()).decode()


def decode_cursor(cursor: str | None) -> int:
    if not cursor:
        return 0
    text = base64.urlsafe_b64decode(cursor.encode()).decode()
    if not text.startswith("o:"):
        raise ValueError(cursor)
    return int(text[2:])


@dataclass(frozen=True)
class Faults:
    """Misbehaviour switched on for tests; all off by default."""

    fail_first: int = 0  # each distinct URL answers 503 this many times before it works
    garbage_first: int = 0  # ...or a 200 maintenance page this many times (looks like success)
    retry_after: int | None = None  # sent with those 503s when set
    missing_users: frozenset[str] = frozenset()  # these profiles answer 404
    slow_users: frozenset[str] = frozenset()  # these profiles answer after ``slow_s``
    slow_s: float = 3.0
    latency_s: float = 0.0  # every reply waits this long: a crawl spreads over time
    rate_limited: bool = False  # while on, each URL's first request answers 429 ...
    rate_limit_retry_after: int = 3600  # ... with this Retry-After (seconds)


def url_key(path: str, query: dict[str, str]) -> str:
    """One string per distinct request: the path and its query, sorted."""
    return path + "?" + "&".join(f"{k}={v}" for k, v in sorted(query.items()))


class Site:
    """Pure request -> reply functions over a ``World``; no sockets here."""

    def __init__(self, world: World, faults: Faults | None = None) -> None:
        self.world = world
        self.faults = faults or Faults()
        self._seen: dict[str, int] = {}
        self._limited: set[str] = set()
        self._lock = threading.Lock()
        self.routes: list[tuple[re.Pattern[str], Callable[..., Reply]]] = [
            (re.compile(r"/h5/feed"), self.feed),
            (re.compile(r"/h5/user/(?P<uid>u\d+)"), self.user),
            (re.compile(r"/h5/user/(?P<uid>u\d+)/statuses"), self.statuses),
            (re.compile(r"/app/article/(?P<aid>a\d+)"), self.article),
            (re.compile(r"/api/comments"), self.comments),
        ]

    def handle(self, path: str, query: dict[str, str]) -> Reply:
        if self.faults.latency_s:
            time.sleep(self.faults.latency_s)
        fault = self._rate_limit(path, query) or self._fault(path, query)
        if fault is not None:
            return fault
        for pattern, view in self.routes:
            match = pattern.fullmatch(path)
            if match:
                try:
                    return view(query, **match.groupdict())
                except (KeyError, ValueError) as exc:
                    return _json(404, {"error": f"not found: {exc}"})
        return _json(404, {"error": "no such route"})

    def _rate_limit(self, path: str, query: dict[str, str]) -> Reply | None:
        """While ``rate_limited`` is on, a URL never limited before answers 429 once."""
        if not self.faults.rate_limited:
            return None
        url = url_key(path, query)
        with self._lock:
            if url in self._limited:
                return None
            self._limited.add(url)
        return _json(429, {"error": "slow down"})

    def _fault(self, path: str, query: dict[str, str]) -> Reply | None:
        """The first asks for each URL fail while ``fail_first``/``garbage_first`` are on."""
        faults = self.faults
        if not (faults.fail_first or faults.garbage_first):
            return None
        url = url_key(path, query)
        with self._lock:
            self._seen[url] = hits = self._seen.get(url, 0) + 1
        if hits <= faults.fail_first:
            return _json(503, {"error": "try again"})
        if hits <= faults.fail_first + faults.garbage_first:
            return 200, "text/html", b"<html><body>Down for maintenance</body></html>"
        return None

    def feed(self, query: dict[str, str]) -> Reply:
        page = int(query.get("page", "1"))
        articles = self.world.feed_page(page)
        if page < 1 or not articles:
            raise ValueError(f"page {page}")
        users = self.world.users
        return _json(200, {
            "page": page,
            "has_more": page < self.world.feed_pages(),
            "articles": [
                {"id": a.id, "title": a.title, "author_id": a.author_id,
                 "author_name": users[a.author_id].name}
                for a in articles
            ],
        })

    def user(self, query: dict[str, str], uid: str) -> Reply:
        if uid in self.faults.missing_users:
            raise KeyError(uid)
        if uid in self.faults.slow_users:
            time.sleep(self.faults.slow_s)
        u = self.world.users[uid]
        body = (
            f'<html><head><title>{html.escape(u.name)}</title></head><body>'
            f'<div class="profile" data-uid="{u.id}"><h1 class="name">{html.escape(u.name)}</h1>'
            f'<span class="followers">{u.followers}</span>'
            f'<p class="bio">{html.escape(u.bio)}</p></div></body></html>'
        )
        return 200, "text/html; charset=utf-8", body.encode()

    def statuses(self, query: dict[str, str], uid: str) -> Reply:
        entries = self.world.statuses[uid]
        return _cursor_page(query, entries, self.world.shape.statuses_page_size, "statuses",
                            lambda s: {"id": s.id, "article_id": s.article_id, "kind": s.kind})

    def article(self, query: dict[str, str], aid: str) -> Reply:
        a = self.world.articles[aid]
        author = self.world.users[a.author_id]
        body = (
            f'<html><head><meta charset="utf-8"><title>{html.escape(a.title)}</title></head>'
            f'<body><article data-id="{a.id}"><h1>{html.escape(a.title)}</h1>'
            f'<div class="meta"><a class="author" href="/h5/user/{author.id}">'
            f'{html.escape(author.name)}</a><time datetime="{a.published}">{a.published}</time>'
            f'</div><div class="body"><p>{html.escape(a.body)}</p></div>'
            f'<span class="comment-count">{a.comments}</span></article></body></html>'
        )
        return 200, "text/html; charset=utf-8", body.encode()

    def comments(self, query: dict[str, str]) -> Reply:
        entries = self.world.comments(query["article_id"])
        return _cursor_page(query, entries, self.world.shape.comments_page_size, "comments",
                            lambda c: c)


def _cursor_page(query: dict[str, str], entries: list[Any], size: int, name: str,
                 dump: Callable[[Any], dict[str, Any]]) -> Reply:
    offset = decode_cursor(query.get("cursor"))
    chunk = entries[offset : offset + size]
    more = offset + size < len(entries)
    return _json(200, {name: [dump(e) for e in chunk],
                       "next_cursor": encode_cursor(offset + size) if more else None})


def _json(status: int, payload: dict[str, Any]) -> Reply:
    return status, "application/json", json.dumps(payload).encode()


class Handler(BaseHTTPRequestHandler):
    """Keep-alive HTTP/1.1; every reply carries Content-Length."""

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms stall
    server: SandboxServer

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        token = self.server.arrived(url_key(parts.path, query), self.client_address[1])
        status, delivered = 0, False  # a view that raised answers nothing
        try:
            status, ctype, body = self.server.site.handle(parts.path, query)
            self.server.count(status)
            self.send_response(status)
            self._retry_after(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
            delivered = True
        finally:
            self.server.answered(token, status, delivered)

    def _retry_after(self, status: int) -> None:
        faults = self.server.site.faults
        if status == 503 and faults.retry_after is not None:
            self.send_header("Retry-After", str(faults.retry_after))
        if status == 429:
            self.send_header("Retry-After", str(faults.rate_limit_retry_after))

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: one line per request would drown the logs."""


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it: what, from which client port, when, how answered."""

    url: str
    client_port: int
    arrived: float  # time.time()
    answered: float | None = None
    status: int | None = None  # None while in flight; 0 if the view raised
    delivered: bool = False  # the reply was written out (the client may still have died)


@dataclass
class RequestLog:
    """Every request, in arrival order; the fault harness counts executions from it."""

    hits: list[Hit] = field(default_factory=list)
    in_flight: dict[int, Hit] = field(default_factory=dict)  # token -> hit


class SandboxServer(ThreadingHTTPServer):
    """The site on a loopback address; ``port=0`` picks a free port."""

    daemon_threads = True

    def __init__(self, site: Site, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), Handler)
        self.site = site
        self.requests_by_status: dict[int, int] = {}
        self.log = RequestLog()
        self._lock = threading.Lock()
        self._tokens = 0

    def arrived(self, url: str, client_port: int) -> int:
        """Record a request as in flight; the token closes it in ``answered``."""
        with self._lock:
            self._tokens += 1
            self.log.in_flight[self._tokens] = Hit(url, client_port, time.time())
            return self._tokens

    def answered(self, token: int, status: int, delivered: bool) -> None:
        with self._lock:
            hit = self.log.in_flight.pop(token)
            self.log.hits.append(Hit(hit.url, hit.client_port, hit.arrived, time.time(), status,
                                     delivered))

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A crawler killed mid-request resets its connection: expected here, not news."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    def in_flight(self) -> list[Hit]:
        """Requests arrived and not answered yet, oldest first."""
        with self._lock:
            return list(self.log.in_flight.values())

    def hits(self) -> list[Hit]:
        """Requests answered so far, in the order they were answered."""
        with self._lock:
            return list(self.log.hits)

    @property
    def base_url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def count(self, status: int) -> None:
        with self._lock:
            self.requests_by_status[status] = self.requests_by_status.get(status, 0) + 1

    def start_in_thread(self) -> threading.Thread:
        thread = threading.Thread(target=self.serve_forever, name="sandbox", daemon=True)
        thread.start()
        return thread
