"""What a correct crawl of the forum stores: the contract a forum crawler's items match.

``expected(world)`` computes it from the world's data alone, never from a crawl. The
crawl starts at ``/forum/``, follows every board's pages, every listed thread and its
pages, the profile of every post's author and every post's reactions, and stores five
collections. Each record is keyed by its first field; every value is exact:

    boards     board_id: str        one per board on /forum/
               name: str
               description: str
               thread_count: int    the rows its list shows, over all its pages
    threads    thread_id: int       one per listed thread that answers 200, from its first page
               title: str
               author_id: int       the opening post's author
               boards: list[str]    every board listing it, sorted (two when cross-posted)
               reply_count: int
    posts      post_id: int         one per post on every page of every thread
               thread_id: int
               author_id: int
               body: str
               created_at: str      UTC ISO-8601, "2026-11-17T12:00:00Z": the page's relative
                                    time read against the response's Date header
               score: int           "1.2k" -> 1200
    users      user_id: int         one per author of a stored post, from /forum/api/users/<id>
               name: str
               joined: str          "2021-04-03"
               reputation: int
    reactions  reaction_id: int     one per entry of every page of /forum/api/posts/<id>/reactions
               post_id: int
               user_id: int         not followed: reacting users are not crawled
               kind: str
               created_at: str      as the JSON gives it

Failures: each listed thread whose page answers 404 or 410, asked once, nothing stored.
Requests of a minimal crawl: every URL above once (the index, each board page, each
thread page and failing thread, each profile, each reactions page); ``urls`` lists them
as the pages link them. ``diff`` says what a recrawl must find between two generations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, urlsplit

from sandbox.calls import Call
from sandbox.forum import pages
from sandbox.forum.formats import iso
from sandbox.forum.site import ForumSite
from sandbox.forum.world import LIVE, ForumWorld, Thread

Key = str | int
Record = dict[str, Any]
COLLECTIONS = ("boards", "threads", "posts", "users", "reactions")


@dataclass(frozen=True)
class ForumExpected:
    """Every record a correct crawl stores, the URLs that must fail, and every URL asked."""

    records: dict[str, dict[Key, Record]]  # collection -> natural key -> record
    failures: dict[str, int]  # URL -> 404 or 410
    urls: frozenset[str]  # every URL a minimal crawl asks for, once each

    @property
    def requests(self) -> int:
        return len(self.urls)

    @property
    def items(self) -> int:
        return sum(len(records) for records in self.records.values())

    def counts(self) -> dict[str, int]:
        return {name: len(records) for name, records in self.records.items()}


def expected(world: ForumWorld) -> ForumExpected:
    """What a correct crawl of ``world`` stores, from the data alone."""
    live = [t for t in world.listed() if t.status == LIVE]
    posts = [p for t in live for p in world.posts_of(t)]
    authors = sorted({p.author_id for p in posts})
    records: dict[str, dict[Key, Record]] = {
        "boards": {b.id: {"board_id": b.id, "name": b.name, "description": b.description,
                          "thread_count": len(b.threads)} for b in world.boards.values()},
        "threads": {t.id: {"thread_id": t.id, "title": t.title, "author_id": t.author_id,
                           "boards": sorted(t.boards), "reply_count": t.reply_count}
                    for t in live},
        "posts": {p.id: {"post_id": p.id, "thread_id": p.thread_id, "author_id": p.author_id,
                         "body": p.body, "created_at": iso(p.created_at), "score": p.score}
                  for p in posts},
        "users": {u: {"user_id": u, "name": world.users[u].name,
                      "joined": world.users[u].joined.isoformat(),
                      "reputation": world.users[u].reputation} for u in authors},
        "reactions": {r.id: {"reaction_id": r.id, "post_id": r.post_id, "user_id": r.user_id,
                             "kind": r.kind, "created_at": iso(r.created_at)}
                      for p in posts for r in world.reactions.get(p.id, ())},
    }
    failures = {pages.thread_url(t.id): t.status for t in world.listed() if t.status != LIVE}
    return ForumExpected(records, failures, frozenset(_urls(world, live, authors)) | set(failures))


def _urls(world: ForumWorld, live: list[Thread], authors: list[int]) -> list[str]:
    urls = ["/forum/"]
    for board in world.boards:
        urls += [pages.board_url(board, n) for n in range(1, world.board_pages(board) + 1)]
    for thread in live:
        starts = [None] + [page[-1].id for page in world.thread_pages(thread)[:-1]]
        urls += [pages.thread_url(thread.id, after) for after in starts]
        for post in thread.posts:
            reactions = world.reaction_pages(post)
            urls += [pages.reactions_url(post, after) for after in
                     [None] + [page[-1].id for page in reactions[:-1]]]
    return urls + [pages.user_url(u) for u in authors]


@dataclass(frozen=True)
class Changes:
    """One collection's difference between two crawls: what a recrawl must find."""

    new: dict[Key, Record]
    changed: dict[Key, tuple[Record, Record]]  # key -> (before, after)
    gone: dict[Key, Record]  # stored before, no longer served or listed

    def apply(self, before: dict[Key, Record]) -> dict[Key, Record]:
        """``before`` brought up to date: what the collection holds after the recrawl."""
        after = {k: v for k, v in before.items() if k not in self.gone}
        after.update(self.new)
        after.update({k: new for k, (_, new) in self.changed.items()})
        return after

    def counts(self) -> dict[str, int]:
        return {"new": len(self.new), "changed": len(self.changed), "gone": len(self.gone)}


def diff(before: ForumWorld, after: ForumWorld) -> dict[str, Changes]:
    """Per collection, the records new, changed and gone from ``before`` to ``after``."""
    old, new = expected(before).records, expected(after).records
    return {name: _changes(old[name], new[name]) for name in COLLECTIONS}


def _changes(old: dict[Key, Record], new: dict[Key, Record]) -> Changes:
    return Changes(
        new={k: v for k, v in new.items() if k not in old},
        changed={k: (old[k], v) for k, v in new.items() if k in old and old[k] != v},
        gone={k: v for k, v in old.items() if k not in new},
    )


def changed_pages(before: ForumWorld, after: ForumWorld) -> dict[str, tuple[int, int]]:
    """Every URL of either generation's crawl whose answer differs between them, with its
    status before and after: the pages a recrawl must fetch again to find ``diff``."""
    old, new = ForumSite(before), ForumSite(after)
    out = {}
    for url in sorted(expected(before).urls | expected(after).urls):
        parts = urlsplit(url)
        call = Call(parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()})
        was, now = old.answer(call), new.answer(call)
        if (was.status, was.body) != (now.status, now.body):
            out[url] = (was.status, now.status)
    return out
