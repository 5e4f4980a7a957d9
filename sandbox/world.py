"""The sandbox's content, generated from a seed, and the crawl graph it implies.

The world is the single source of truth for the tests: ``expected()`` computes,
from the data alone (not from the crawler), how many units each step of the demo
chain must run and how many items it must store.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from math import ceil


@dataclass(frozen=True)
class Shape:
    """Sizes of the world; the defaults make a demo of a few hundred units."""

    users: int = 25
    articles: int = 80
    feed_page_size: int = 10
    statuses_page_size: int = 5
    comments_page_size: int = 10
    max_comments: int = 14
    reposts: int = 30


@dataclass(frozen=True)
class User:
    id: str
    name: str
    followers: int
    bio: str


@dataclass(frozen=True)
class Article:
    id: str
    author_id: str
    title: str
    body: str
    published: str
    comments: int


@dataclass(frozen=True)
class Status:
    id: str
    user_id: str
    article_id: str
    kind: str  # "post" or "repost"


@dataclass
class World:
    """Everything the site serves, built once from ``seed`` and ``shape``."""

    seed: int = 7
    shape: Shape = field(default_factory=Shape)

    @cached_property
    def users(self) -> dict[str, User]:
        rnd = random.Random(f"{self.seed}:users")
        return {
            f"u{i:04d}": User(f"u{i:04d}", f"user {i}", rnd.randint(0, 50_000), _words(rnd, 8))
            for i in range(self.shape.users)
        }

    @cached_property
    def articles(self) -> dict[str, Article]:
        rnd = random.Random(f"{self.seed}:articles")
        uids = sorted(self.users)
        out = {}
        for i in range(self.shape.articles):
            aid = f"a{i:05d}"
            out[aid] = Article(
                id=aid,
                author_id=rnd.choice(uids),
                title=_words(rnd, 5).title(),
                body=_words(rnd, 40),
                published=f"2026-{1 + i % 12:02d}-{1 + i % 28:02d}T{i % 24:02d}:00:00Z",
                comments=rnd.randint(0, self.shape.max_comments),
            )
        return out

    @cached_property
    def statuses(self) -> dict[str, list[Status]]:
        """Per user, newest first: a post per authored article, plus reposts."""
        rnd = random.Random(f"{self.seed}:statuses")
        pairs = [(a.author_id, a.id, "post") for a in self.articles.values()]
        aids, uids = sorted(self.articles), sorted(self.users)
        pairs += [(rnd.choice(uids), rnd.choice(aids), "repost") for _ in range(self.shape.reposts)]
        out: dict[str, list[Status]] = {uid: [] for uid in self.users}
        for n, (uid, aid, kind) in enumerate(pairs):
            out[uid].append(Status(f"s{n:06d}", uid, aid, kind))
        return {uid: sorted(s, key=lambda x: x.id, reverse=True) for uid, s in out.items()}

    def feed_pages(self) -> int:
        return ceil(len(self.articles) / self.shape.feed_page_size)

    @cached_property
    def _in_feed_order(self) -> list[Article]:
        return list(self.articles.values())

    def feed_page(self, page: int) -> list[Article]:
        size = self.shape.feed_page_size
        return self._in_feed_order[(page - 1) * size : page * size]

    def comments(self, article_id: str) -> list[dict[str, str]]:
        article = self.articles[article_id]
        rnd = random.Random(f"{self.seed}:comments:{article_id}")
        uids = sorted(self.users)
        return [
            {"id": f"{article_id}-c{j:03d}", "article_id": article_id,
             "user_id": rnd.choice(uids), "text": _words(rnd, 12)}
            for j in range(article.comments)
        ]

    def expected(self) -> dict[str, dict[str, int]]:
        """Units and items per step of the demo chain, derived from the data alone."""
        authors = {a.author_id for a in self.articles.values()}
        statuses = [s for uid in authors for s in self.statuses[uid]]
        details = {s.article_id for s in statuses}
        s_page, c_page = self.shape.statuses_page_size, self.shape.comments_page_size
        return {
            "feed": {"units": self.feed_pages(), "items": len(self.articles)},
            "user_info": {"units": len(authors), "items": len(authors)},
            "user_statuses": {
                "units": sum(_pages(len(self.statuses[u]), s_page) for u in authors),
                "items": len(statuses),
            },
            "detail": {"units": len(details), "items": len(details)},
            "comment": {
                "units": sum(_pages(self.articles[a].comments, c_page) for a in details),
                "items": sum(self.articles[a].comments for a in details),
            },
        }


def _pages(n: int, size: int) -> int:
    """A list of ``n`` entries takes this many pages; an empty list still takes one."""
    return max(1, ceil(n / size))


_VOCAB = [
    "crawl", "queue", "worker", "chain", "fetch", "parse", "proxy", "cookie", "redis",
    "celery", "spider", "site", "page", "index", "feed", "user", "status", "detail", "comment",
    "signal", "retry", "ledger", "batch", "host",
]


def _words(rnd: random.Random, n: int) -> str:
    return " ".join(rnd.choice(_VOCAB) for _ in range(n))


def expected_keys(world: World) -> dict[str, set[str]]:
    """The item keys each collection must hold after one demo crawl of ``world``."""
    authors = {a.author_id for a in world.articles.values()}
    statuses = [s for uid in authors for s in world.statuses[uid]]
    details = {s.article_id for s in statuses}
    return {
        "feed_entries": set(world.articles),
        "users": authors,
        "statuses": {s.id for s in statuses},
        "articles": details,
        "comments": {c["id"] for a in details for c in world.comments(a)},
    }
