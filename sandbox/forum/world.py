"""The forum's data: boards, threads, posts, users and reactions at one moment of its clock.

A ``ForumWorld`` is one generation of the site, immutable, built by ``ForumWorld.build``
from a seed and a ``ForumShape`` (``mutations.next_generation`` derives the next one).
Everything is deterministic: the same seed, shape and clock give the same bytes.

How the data is laid out, and why:

* Board lists are oldest first (by thread id), so new threads land on the last page and
  a full last page grows a next link, as the demo feed does.
* A cross-posted thread is one ``Thread`` listed by two boards.
* Listed threads whose page answers 404 or 410 hold no posts; their rows show a title,
  an author and a reply count like any other.
* Post ids rise with time (across the forum at generation 0, within each thread
  after), so a thread's posts in id order are in time order. Every time is a whole
  minute, at generation 0 at least ``MIN_AGE`` before the clock, leaving room for newer
  posts after a mutation.
* Users are static: a profile holds nothing a new post or reaction changes, so a
  mutation never changes a profile (a recrawl need not refetch them).
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from math import ceil

from sandbox.forum.formats import DAY, HOUR, MINUTE

DEFAULT_NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
MIN_AGE = 30 * MINUTE  # generation 0 holds nothing newer than this
MAX_AGE = 700 * DAY
FIRST_THREAD, FIRST_POST, FIRST_REACTION = 1001, 50001, 1
LIVE, MISSING, DELETED = 200, 404, 410
KINDS = ("like", "love", "laugh", "wow", "sad", "angry")


@dataclass(frozen=True)
class ForumShape:
    """Sizes of a forum; the defaults make a crawl of a few hundred requests, for tests."""

    boards: tuple[int, ...] = (50, 31, 9)  # rows each board lists, cross-posts included
    crossposts: int = 4  # threads listed by a second board
    missing: int = 2  # listed threads whose page answers 404
    deleted: int = 2  # ... and 410
    users: int = 40
    max_replies: int = 4  # an ordinary thread has 0..max_replies replies
    long_threads: int = 3  # threads of several pages ...
    long_replies: int = 28  # ... with posts_page_size*2 .. long_replies replies
    list_page_size: int = 25
    posts_page_size: int = 10
    reactions_page_size: int = 10
    quiet_posts: float = 0.5  # the share of posts nobody reacted to

    def __post_init__(self) -> None:
        problems = self._problems()
        if problems:
            raise ValueError("ForumShape: " + "; ".join(problems))

    def _problems(self) -> list[str]:
        out = []
        if len(self.boards) < 2:
            out.append("boards needs two boards at least (cross-posts and mutations use two)")
        if not any(rows % self.list_page_size == 0 for rows in self.boards):
            out.append(f"no board lists an exact multiple of list_page_size "
                       f"({self.list_page_size}) rows; make one so, it is a case to test")
        homes = [rows - n for rows, n in zip(self.boards, _cross_in(self), strict=True)]
        if min(homes, default=0) < 2:
            out.append("each board needs at least 2 rows more than the cross-posts it lists")
        special = self.crossposts + self.missing + self.deleted + self.long_threads
        if special + 4 > sum(homes):
            out.append(f"too few threads ({sum(homes)}) for {special} special ones and "
                       f"the 4 a mutation uses")
        if self.users < 2:
            out.append("users must be 2 or more")
        if self.long_replies < 2 * self.posts_page_size:
            out.append("long_replies must be at least 2 * posts_page_size")
        if not 0 <= self.quiet_posts < 1:
            out.append("quiet_posts is a share: 0 <= quiet_posts < 1")
        if min(self.list_page_size, self.posts_page_size, self.reactions_page_size) < 1:
            out.append("page sizes must be 1 or more")
        return out

    @property
    def threads(self) -> int:
        """Distinct threads: every listed row, a cross-posted thread counted once."""
        return sum(self.boards) - self.crossposts


def _cross_in(shape: ForumShape) -> list[int]:
    """How many cross-posted threads each board lists besides its own."""
    counts = Counter(target for _, target in _cross_pairs(shape))
    return [counts[b] for b in range(len(shape.boards))]


def _cross_pairs(shape: ForumShape) -> list[tuple[int, int]]:
    """(home board, second board) for each cross-posted thread, round the boards."""
    n = len(shape.boards)
    return [(j % n, (j % n + 1) % n) for j in range(shape.crossposts)]


SHAPES: dict[str, ForumShape] = {
    "small": ForumShape(),
    # the deep-chain benchmark (issue 17): >= 20,000 requests, >= 60,000 items
    "large": ForumShape(boards=(475, 360, 310, 265, 230, 200, 155, 95), crossposts=40,
                        missing=12, deleted=12, users=1500, max_replies=10,
                        long_threads=60, long_replies=70, posts_page_size=20, quiet_posts=0.62),
}


@dataclass(frozen=True)
class Board:
    id: str
    name: str
    description: str
    threads: tuple[int, ...]  # listed, oldest first


@dataclass(frozen=True)
class Thread:
    id: int
    title: str
    author_id: int
    boards: tuple[str, ...]  # home board first
    status: int = LIVE  # LIVE, MISSING or DELETED
    posts: tuple[int, ...] = ()  # opening post first, then replies, oldest first
    row_replies: int = 0  # the reply count a dead thread's row shows

    @property
    def reply_count(self) -> int:
        return len(self.posts) - 1 if self.status == LIVE else self.row_replies


@dataclass(frozen=True)
class Post:
    id: int
    thread_id: int
    author_id: int
    body: str
    created_at: datetime
    score: int


@dataclass(frozen=True)
class User:
    id: int
    name: str
    joined: date
    reputation: int


@dataclass(frozen=True)
class Reaction:
    id: int
    post_id: int
    user_id: int
    kind: str
    created_at: datetime


@dataclass(frozen=True)
class ForumWorld:
    """One generation of the forum; pages are functions of it and of ``now``."""

    seed: int
    shape: ForumShape
    now: datetime
    boards: Mapping[str, Board]  # in the index's order
    threads: Mapping[int, Thread]
    posts: Mapping[int, Post]
    users: Mapping[int, User]
    reactions: Mapping[int, tuple[Reaction, ...]]  # by post id, oldest first; none: absent
    generation: int = 0

    @classmethod
    def build(cls, seed: int = 7, shape: ForumShape | None = None,
              now: datetime = DEFAULT_NOW) -> ForumWorld:
        """Generation 0 of the forum for ``seed``; ``now`` is its clock, a whole minute."""
        if now.tzinfo is None or now.second or now.microsecond:
            raise ValueError(f"now={now.isoformat()}: the clock must be an aware datetime "
                             f"on a whole minute")
        return _Generator(seed, shape or ForumShape(), now.astimezone(UTC)).world()

    def listed(self) -> list[Thread]:
        """Every thread some board lists, once each, by id."""
        ids = {tid for board in self.boards.values() for tid in board.threads}
        return [self.threads[tid] for tid in sorted(ids)]

    def board_pages(self, board_id: str) -> int:
        """Pages of a board's list; a board of 0 rows still has its (empty) first page."""
        return max(1, ceil(len(self.boards[board_id].threads) / self.shape.list_page_size))

    def board_page(self, board_id: str, page: int) -> list[Thread]:
        size = self.shape.list_page_size
        rows = self.boards[board_id].threads[(page - 1) * size : page * size]
        return [self.threads[tid] for tid in rows]

    def posts_of(self, thread: Thread) -> list[Post]:
        """A thread's posts, the opening post first."""
        return [self.posts[pid] for pid in thread.posts]

    def thread_pages(self, thread: Thread) -> list[tuple[Post, ...]]:
        """A live thread's posts, page by page: the opening post first on page 1."""
        size = self.shape.posts_page_size
        posts = self.posts_of(thread)
        return [tuple(posts[i : i + size]) for i in range(0, len(posts), size)]

    def reaction_pages(self, post_id: int) -> list[tuple[Reaction, ...]]:
        """A post's reactions page by page; no reactions is one empty page."""
        size = self.shape.reactions_page_size
        entries = self.reactions.get(post_id, ())
        return [entries[i : i + size] for i in range(0, len(entries), size)] or [()]


BOARDS = [
    ("general", "General", "Anything about crawling that fits nowhere else"),
    ("help", "Help & Support", "Stuck? Ask here"),
    ("showcase", "Showcase", "Crawlers you built, and what they found"),
    ("proxies", "Proxies", "Exits, pools, bans and what they cost"),
    ("parsing", "Parsing", "Selectors, layouts and the pages that break them"),
    ("queues", "Queues", "Brokers, workers and exactly-once dreams"),
    ("jobs", "Jobs", "Hiring and looking"),
    ("off-topic", "Off-topic", "Everything else"),
]
FIRST_NAMES = ["Ada", "Linus", "Grace", "Ken", "Barbara", "Dennis", "Frances", "Guido",
               "Margaret", "Seán", "Zoë", "José", "Hedy", "Alan", "Radia", "Niklaus"]
LAST_NAMES = ["Lovelace", "Torvalds", "Hopper", "Thompson", "Liskov", "Ritchie", "Allen",
              "van Rossum", "Hamilton", "O'Brien", "Müller", "García", "Lamarr", "Kay"]
TITLE_WORDS = ["crawl", "queue", "proxy", "cookie", "retry", "ban", "captcha", "cursor",
               "sitemap", "robots.txt", "redis", "celery", "scrapy", "XPath", "CSS",
               "what's", "can't", "naïve", "Q&A", "<div>", "pagination", "dedup", "rate"]
BODY_WORDS = ["the", "a", "crawler", "page", "fetch", "parse", "worker", "queue", "proxy",
              "ban", "retry", "after", "seconds", "server", "header", "cookie", "session",
              "selector", "item", "field", "store", "list", "next", "link", "works",
              "fails", "why", "how", "I", "we", "it's", "don't", "<b>", "&", "\"quoted\""]


class _Generator:
    """Builds generation 0, one random stream per concern so a change to one leaves the
    others' data as it was."""

    def __init__(self, seed: int, shape: ForumShape, now: datetime) -> None:
        self.seed, self.shape, self.now = seed, shape, now

    def rnd(self, concern: str) -> random.Random:
        return random.Random(f"forum:{self.seed}:{concern}")

    def world(self) -> ForumWorld:
        users = self.users()
        threads = self.threads(sorted(users))
        posts, threads = self.posts(threads, sorted(users))
        boards = self.boards(threads)
        return ForumWorld(self.seed, self.shape, self.now, boards, threads, posts, users,
                          self.reactions(posts, sorted(users)))

    def users(self) -> dict[int, User]:
        rnd = self.rnd("users")
        out = {}
        for uid in range(1, self.shape.users + 1):
            name = f"{rnd.choice(FIRST_NAMES)} {rnd.choice(LAST_NAMES)}"
            joined = (self.now - timedelta(days=rnd.randint(30, 4000))).date()
            out[uid] = User(uid, name, joined, int(rnd.expovariate(1 / 300)))
        return out

    def threads(self, uids: list[int]) -> dict[int, Thread]:
        """Threads by id with their boards and status; no posts yet."""
        shape, rnd = self.shape, self.rnd("threads")
        board_ids = [_board_id(i) for i in range(len(shape.boards))]
        cross_in = _cross_in(shape)
        homes = [b for b, n in enumerate(shape.boards) for _ in range(n - cross_in[b])]
        rnd.shuffle(homes)
        ids = {FIRST_THREAD + i: home for i, home in enumerate(homes)}
        second: dict[int, int] = {}
        for home, target in _cross_pairs(shape):
            tid = rnd.choice([t for t, h in ids.items() if h == home and t not in second])
            second[tid] = target
        plain = [t for t in ids if t not in second]
        dead = rnd.sample(plain, shape.missing + shape.deleted)
        status = {t: MISSING for t in dead[: shape.missing]}
        status |= {t: DELETED for t in dead[shape.missing :]}
        out = {}
        for tid, home in ids.items():
            boards = (board_ids[home],) + ((board_ids[second[tid]],) if tid in second else ())
            out[tid] = Thread(tid, random_title(rnd), rnd.choice(uids), boards,
                              status.get(tid, LIVE), row_replies=rnd.randint(0, 9))
        return out

    def posts(self, threads: dict[int, Thread],
              uids: list[int]) -> tuple[dict[int, Post], dict[int, Thread]]:
        """Every live thread's posts, ids rising with time across the forum."""
        shape, rnd = self.shape, self.rnd("posts")
        live = [t for t in threads.values() if t.status == LIVE]
        long = set(rnd.sample([t.id for t in live], shape.long_threads))
        opened = sorted((self.age(rnd, MIN_AGE, MAX_AGE) for _ in threads), reverse=True)
        drafts = []  # (age, thread id, position, author)
        for thread, op_age in zip(threads.values(), opened, strict=True):
            if thread.status != LIVE:
                continue
            replies = (rnd.randint(2 * shape.posts_page_size, shape.long_replies)
                       if thread.id in long else rnd.randint(0, shape.max_replies))
            ages = sorted((self.age(rnd, MIN_AGE, op_age) for _ in range(replies)), reverse=True)
            drafts.append((op_age, thread.id, 0, thread.author_id))
            drafts += [(age, thread.id, i + 1, rnd.choice(uids)) for i, age in enumerate(ages)]
        drafts.sort(key=lambda d: (-d[0], d[1], d[2]))
        posts: dict[int, Post] = {}
        by_thread: dict[int, list[int]] = {t.id: [] for t in live}
        for pid, (age, tid, _, author) in enumerate(drafts, FIRST_POST):
            posts[pid] = Post(pid, tid, author, random_body(rnd), self.now - timedelta(seconds=age),
                              _score(rnd))
            by_thread[tid].append(pid)
        out = {tid: replace(t, posts=tuple(by_thread[tid])) if t.status == LIVE else t
               for tid, t in threads.items()}
        return posts, out

    def boards(self, threads: dict[int, Thread]) -> dict[str, Board]:
        out = {}
        for i in range(len(self.shape.boards)):
            bid, name, description = _board(i)
            rows = tuple(sorted(t.id for t in threads.values() if bid in t.boards))
            out[bid] = Board(bid, name, description, rows)
        return out

    def reactions(self, posts: dict[int, Post],
                  uids: list[int]) -> dict[int, tuple[Reaction, ...]]:
        rnd, size = self.rnd("reactions"), self.shape.reactions_page_size
        out, rid = {}, FIRST_REACTION
        for post in posts.values():
            n = _reaction_count(rnd, size, self.shape.quiet_posts)
            if not n:
                continue
            span = int((self.now - post.created_at).total_seconds()) // MINUTE
            offsets = sorted(rnd.randint(0, span) for _ in range(n))
            out[post.id] = tuple(
                Reaction(rid + i, post.id, rnd.choice(uids), rnd.choice(KINDS),
                         post.created_at + timedelta(minutes=m))
                for i, m in enumerate(offsets))
            rid += n
        return out

    def age(self, rnd: random.Random, lo: int, hi: int) -> int:
        """Seconds before the clock, in [lo, hi], a whole minute; most in whole days (as
        "N days ago"), some yesterday, some in whole hours or minutes, so every form
        the pages write turns up."""
        since_yesterday = int((self.now - datetime.combine(
            self.now.date() - timedelta(days=1), datetime.min.time(), UTC)).total_seconds())
        forms = [  # (weight, first, last, step)
            (6, 2 * DAY, MAX_AGE, DAY),
            (1, since_yesterday - DAY + MINUTE, since_yesterday, MINUTE),
            (1, HOUR, 23 * HOUR, HOUR),
            (1, MINUTE, 59 * MINUTE, MINUTE),
        ]
        ranges = [(w, range(-(-max(lo, a) // s) * s, min(hi, b) + 1, s)) for w, a, b, s in forms]
        ranges = [(w, r) for w, r in ranges if len(r)]
        if not ranges:
            return -(-lo // MINUTE) * MINUTE
        choice = rnd.choices([r for _, r in ranges], [w for w, _ in ranges])[0]
        return rnd.choice(choice)


def _board(i: int) -> tuple[str, str, str]:
    if i < len(BOARDS):
        return BOARDS[i]
    return f"board-{i + 1}", f"Board {i + 1}", f"Board number {i + 1}"


def _board_id(i: int) -> str:
    return _board(i)[0]


def random_title(rnd: random.Random) -> str:
    """A thread title: words that need escaping in HTML, some non-ASCII."""
    words = [rnd.choice(TITLE_WORDS) for _ in range(rnd.randint(3, 7))]
    return " ".join(words).capitalize() + rnd.choice(["?", "", "!", " (solved)"])


def random_body(rnd: random.Random) -> str:
    """A post's text: one line of words, with ``&``, quotes and a tag written as text."""
    return " ".join(rnd.choice(BODY_WORDS) for _ in range(rnd.randint(6, 30)))


def _score(rnd: random.Random) -> int:
    roll = rnd.random()
    if roll < 0.05:
        return rnd.randint(-9, -1)
    if roll < 0.85:
        return min(999, int(rnd.expovariate(1 / 40)))
    return 100 * rnd.randint(10, 250)


def _reaction_count(rnd: random.Random, size: int, quiet: float) -> int:
    """A share ``quiet`` of posts has none; of the others 70 % fit one page, the rest fill
    two to five pages, some exactly (a full last page has no next cursor)."""
    roll = rnd.random()
    if roll < quiet:
        return 0
    roll = (roll - quiet) / (1 - quiet)
    if roll < 0.7:
        return rnd.randint(1, size - 1) if size > 1 else 1
    if roll < 0.9:
        return rnd.randint(size, 2 * size + 5)
    return rnd.randint(2 * size + 6, 4 * size + 5)

