"""The forum's routes: a ``Call`` in, an ``Answer`` out, every answer dated by the world's
clock (``Date``), never the machine's, so a crawler reads relative times against it.

    GET  /forum/                                  boards index (HTML)
    GET  /forum/b/<board>?page=N                  a board's threads, 25 a page (HTML)
    GET  /forum/t/<thread>?after=C                a thread's posts (HTML); 404/410 if dead
    GET  /forum/api/users/<user>                  a profile (JSON)
    GET  /forum/api/posts/<post>/reactions?cursor=C   a post's reactions (JSON)
    POST /forum/__admin/mutate?advance_s=S        the next generation; answers the mutation

Anything else under ``/forum`` is 404. ``sandbox.server.Site`` mounts this under its
routes; ``fast_server`` serves it alone.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from datetime import timedelta

from sandbox.calls import HTML, JSON, Answer, Call
from sandbox.forum import cursors, pages
from sandbox.forum.formats import http_date
from sandbox.forum.mutations import Mutation, next_generation
from sandbox.forum.world import DELETED, LIVE, ForumWorld

PREFIX = "/forum"
View = Callable[..., Answer]


class ForumSite:
    """The forum's pages over the current generation of its world."""

    def __init__(self, world: ForumWorld | None = None) -> None:
        self._world = world  # None: the default world, built when first asked for
        self._lock = threading.Lock()
        self.routes: list[tuple[str, re.Pattern[str], View]] = [
            ("GET", re.compile(r"/forum/"), self.index),
            ("GET", re.compile(r"/forum/b/(?P<board>[a-z0-9-]+)"), self.board),
            ("GET", re.compile(r"/forum/t/(?P<thread>\d+)"), self.thread),
            ("GET", re.compile(r"/forum/api/users/(?P<user>\d+)"), self.user),
            ("GET", re.compile(r"/forum/api/posts/(?P<post>\d+)/reactions"), self.reactions),
            ("POST", re.compile(r"/forum/__admin/mutate"), self.admin_mutate),
        ]

    @property
    def world(self) -> ForumWorld:
        """The generation being served now."""
        world = self._world
        if world is None:
            with self._lock:
                if self._world is None:
                    self._world = ForumWorld.build()
                world = self._world
        return world

    def mutate(self, advance: timedelta = timedelta(0)) -> Mutation:
        """Move to the next generation while serving; answers after this see it whole."""
        with self._lock:
            self._world, mutation = next_generation(self._world or ForumWorld.build(), advance)
        return mutation

    def answer(self, call: Call) -> Answer:
        world = self.world  # one generation per answer, whatever a mutation does meanwhile
        for method, pattern, view in self.routes:
            match = pattern.fullmatch(call.path)
            if match and call.method == method:
                try:
                    return view(world, call, **match.groupdict())
                except (KeyError, ValueError) as exc:
                    return self._not_found(world, call.path, exc)
        return self._not_found(world, call.path, "no such page")

    def index(self, world: ForumWorld, call: Call) -> Answer:
        return _answer(world, 200, HTML, pages.index(world))

    def board(self, world: ForumWorld, call: Call, board: str) -> Answer:
        page = _int(call.query.get("page", "1"), "page")
        if not 1 <= page <= world.board_pages(board):
            raise ValueError(f"board {board} has no page {page}")
        return _answer(world, 200, HTML, pages.board_page(world, board, page))

    def thread(self, world: ForumWorld, call: Call, thread: str) -> Answer:
        found = world.threads[int(thread)]
        if found.status == DELETED:
            return _answer(world, 410, HTML, pages.missing("Gone", "This thread was deleted."))
        if found.status != LIVE:
            raise KeyError(thread)
        token = call.query.get("after")
        after = cursors.decode("t", found.id, token) if token is not None else None
        return _answer(world, 200, HTML, pages.thread_page(world, found, after))

    def user(self, world: ForumWorld, call: Call, user: str) -> Answer:
        return _answer(world, 200, JSON, pages.user(world, int(user)))

    def reactions(self, world: ForumWorld, call: Call, post: str) -> Answer:
        found = world.posts[int(post)]
        if world.threads[found.thread_id].status == DELETED:
            return _answer(world, 410, JSON, b'{"error": "this post was deleted"}')
        token = call.query.get("cursor")
        after = cursors.decode("r", found.id, token) if token is not None else None
        return _answer(world, 200, JSON, pages.reactions(world, found.id, after))

    def admin_mutate(self, world: ForumWorld, call: Call) -> Answer:
        raw = call.query.get("advance_s") or call.form.get("advance_s") or "0"
        try:
            mutation = self.mutate(timedelta(seconds=_int(raw, "advance_s")))
        except ValueError as exc:
            return _answer(world, 400, JSON, json.dumps({"error": str(exc)}).encode())
        return _answer(self.world, 200, JSON, json.dumps(mutation.as_json()).encode())

    def _not_found(self, world: ForumWorld, path: str, why: object) -> Answer:
        if path.startswith(f"{PREFIX}/api/") or path.startswith(f"{PREFIX}/__admin/"):
            return _answer(world, 404, JSON, json.dumps({"error": f"not found: {why}"}).encode())
        return _answer(world, 404, HTML, pages.missing("Not found", f"Not found: {why}"))


def _answer(world: ForumWorld, status: int, content_type: str, body: bytes) -> Answer:
    return Answer(status, content_type, body, (("Date", http_date(world.now)),))


def _int(raw: str, name: str) -> int:
    if not raw.isdigit():
        raise ValueError(f"{name}={raw!r} is not a whole number")
    return int(raw)
