"""The sandbox's HTTP server: a threaded stdlib server on loopback.

Routes (h5 = mobile web JSON/HTML, app = the app's article pages):

    GET /h5/feed?page=N                      JSON, paged articles with authors
    GET /h5/user/<uid>                       HTML profile
    GET /h5/user/<uid>/statuses?cursor=C     JSON, cursor-paged statuses
    GET /app/article/<aid>                   HTML article detail
    GET /api/comments?article_id=A&cursor=C  JSON, cursor-paged comments

plus login and device registration (``sandbox.login``) and ``GET /health``; the forum
(``sandbox.forum``) is mounted under ``/forum/``, with neither defences nor faults but
``latency_s``. ``Faults``
make it misbehave for tests; ``Defences`` (``sandbox.defences``) make it defend itself
like a real site.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import logging
import re
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sandbox.calls import Answer, Call, json_answer
from sandbox.defences import Defences, Guard
from sandbox.forum.site import ForumSite
from sandbox.world import World

Reply = tuple[int, str, bytes]  # status, content type, body
UNSIGNED = frozenset({"sign", "ts"})  # a request's signature is not part of what it asks for
access = logging.getLogger("sandbox.access")


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
    missing_statuses: frozenset[str] = frozenset()  # these users' status lists answer 404
    slow_users: frozenset[str] = frozenset()  # these profiles answer after ``slow_s``
    slow_s: float = 3.0
    latency_s: float = 0.0  # every reply waits this long: a crawl spreads over time
    rate_limited: bool = False  # while on, each URL's first request answers 429 ...
    rate_limit_retry_after: int = 3600  # ... with this Retry-After (seconds)
    huge_articles: frozenset[str] = frozenset()  # these article pages carry ``huge_bytes``
    huge_bytes: int = 0  # of hidden filler after the article (its item is unchanged)


def url_key(path: str, query: Mapping[str, str]) -> str:
    """One string per distinct request: the path and its query, sorted, signature left out
    (a retry signs again: it is still the same request)."""
    return path + "?" + "&".join(f"{k}={v}" for k, v in sorted(query.items())
                                 if k not in UNSIGNED)


class Site:
    """Pure request -> reply functions over a ``World``; no sockets here."""

    def __init__(self, world: World, faults: Faults | None = None,
                 defences: Defences | None = None, forum: ForumSite | None = None) -> None:
        self.world = world
        self.forum = forum or ForumSite()
        self.faults = faults or Faults()
        self.guard = Guard(defences)
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
        """A GET from the default client, for tests that need no headers."""
        answer = self.answer(Call(path, query))
        return answer.status, answer.content_type, answer.body

    def answer(self, call: Call) -> Answer:
        """Defences first, then faults, then login and device desks, then the pages."""
        if call.path == "/health":  # for health checks: no defence, no fault
            return json_answer(200, {"ok": True})
        if self.faults.latency_s:
            time.sleep(self.faults.latency_s)
        if call.path.startswith("/forum/"):
            return self.forum.answer(call)
        screened = self.guard.screen(call) or self.guard.route(call)
        if screened is not None:
            return screened
        return Answer(*self._page(call.path, dict(call.query)))

    def _page(self, path: str, query: dict[str, str]) -> Reply:
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
        if uid in self.faults.missing_statuses:
            raise KeyError(uid)
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
        if aid in self.faults.huge_articles:
            return 200, "text/html; charset=utf-8", body.encode()[:-14] + filler(
                self.faults.huge_bytes) + b"</body></html>"
        return 200, "text/html; charset=utf-8", body.encode()

    def comments(self, query: dict[str, str]) -> Reply:
        entries = self.world.comments(query["article_id"])
        return _cursor_page(query, entries, self.world.shape.comments_page_size, "comments",
                            lambda c: c)


@functools.lru_cache(maxsize=2)
def filler(nbytes: int) -> bytes:
    """``nbytes`` of hidden paragraphs (10 kB each): a page as heavy as a bloated real one,
    parsed as a real DOM (no single text node past lxml's 10 MB limit)."""
    para = b'<p class="pad">' + b"lorem ipsum " * 850 + b"</p>\n"
    return b'<div hidden="">' + para * max(1, nbytes // len(para)) + b"</div>"


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
        self._serve()

    def do_POST(self) -> None:
        self._serve()

    def _serve(self) -> None:
        call = self._call()
        token = self.server.arrived(url_key(call.path, call.query), self.client_address[1],
                                    call.client, call.header("user-agent"))
        status, delivered = 0, False  # a view that raised answers nothing
        try:
            answer = self.server.site.answer(call)
            status = answer.status
            self.server.count(status)
            self._status_line(answer)
            self._retry_after(answer)
            for name, value in answer.headers:
                self.send_header(name, value)
            self.send_header("Content-Type", answer.content_type)
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            self.wfile.write(answer.body)
            self.wfile.flush()
            delivered = True
        finally:
            self.server.answered(token, status, delivered)

    def _status_line(self, answer: Answer) -> None:
        """The status, then ``Server`` and ``Date``, unless the answer brings its own
        ``Date`` (the forum's clock is not the machine's)."""
        if not answer.has_header("Date"):
            self.send_response(answer.status)
            return
        self.log_request(answer.status)
        self.send_response_only(answer.status)
        self.send_header("Server", self.version_string())

    def _call(self) -> Call:
        """The request as views see it; the client address is the exit the site sees."""
        parts = urlsplit(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode("utf-8", "replace") if length else ""
        return Call(
            path=parts.path, query={k: v[0] for k, v in parse_qs(parts.query).items()},
            method=self.command, client=self.client_address[0],
            headers={k.lower(): v for k, v in self.headers.items()},
            cookies=_cookies(self.headers.get("Cookie", "")),
            form={k: v[0] for k, v in parse_qs(body).items()},
        )

    def _retry_after(self, answer: Answer) -> None:
        faults = self.server.site.faults
        if answer.has_header("Retry-After"):
            return
        if answer.status == 503 and faults.retry_after is not None:
            self.send_header("Retry-After", str(faults.retry_after))
        if answer.status == 429:
            self.send_header("Retry-After", str(faults.rate_limit_retry_after))

    def log_message(self, format: str, *args: Any) -> None:
        """One line per request at DEBUG only: at INFO it would drown the logs."""
        access.debug(format, *args)


def _cookies(header: str) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(header)
    except CookieError:
        return {}
    return {name: morsel.value for name, morsel in jar.items()}


@dataclass(frozen=True)
class Hit:
    """One request as the server saw it: what, from which client port, when, how answered."""

    url: str
    client_port: int
    arrived: float  # time.time()
    answered: float | None = None
    status: int | None = None  # None while in flight; 0 if the view raised
    delivered: bool = False  # the reply was written out (the client may still have died)
    client: str = "127.0.0.1"  # the client's address: a proxy's exit when one was used
    agent: str = ""  # its User-Agent: which fetch client (or browser) it presented


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

    def arrived(self, url: str, client_port: int, client: str = "127.0.0.1",
                agent: str = "") -> int:
        """Record a request as in flight; the token closes it in ``answered``."""
        with self._lock:
            self._tokens += 1
            self.log.in_flight[self._tokens] = Hit(url, client_port, time.time(), client=client,
                                                   agent=agent)
            return self._tokens

    def answered(self, token: int, status: int, delivered: bool) -> None:
        with self._lock:
            hit = self.log.in_flight.pop(token)
            self.log.hits.append(Hit(hit.url, hit.client_port, hit.arrived, time.time(), status,
                                     delivered, hit.client, hit.agent))

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

    def fetch_counts(self, prefix: str = "") -> Counter[str]:
        """How many times each URL under ``prefix`` was asked for (``url_key`` form),
        answered or not: a client may read its reply before ``answered`` logs it."""
        with self._lock:
            urls = [hit.url for hit in (*self.log.hits, *self.log.in_flight.values())]
        return Counter(url for url in urls if url.startswith(prefix))

    def duplicates(self, prefix: str = "") -> dict[str, int]:
        """URLs under ``prefix`` asked for more than once: empty after an exact crawl."""
        return {url: n for url, n in self.fetch_counts(prefix).items() if n > 1}

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
