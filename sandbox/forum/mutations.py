"""The forum's next generation: what changes between two crawls (issue 19).

``next_generation(world)`` returns the world one generation on, and the ``Mutation``
that says what it did. Each step, deterministic from the seed and the generation:

* new threads in one board, enough to add exactly one page to its list (the first
  board whose list does not end on a full page), the first by a newly joined user;
* new replies on an old thread (on its board's first page), enough to add a page;
* new reactions on an old post, enough to add a page to its reactions;
* one post's score changed (to a figure written "N.Nk");
* one thread deleted: it answers 410 and no board lists it any more. It is taken from
  the last page of a board other than the growing one, so no other row moves, and is
  one whose authors all post elsewhere, so no user drops out of the crawl.

The clock stays where it was unless ``advance`` is given. New posts and reactions are
at most ``NEW_WINDOW`` old. ``expected.diff`` gives the records a recrawl must find.
"""

from __future__ import annotations

import random
from collections import Counter
from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from sandbox.forum.formats import MINUTE
from sandbox.forum.world import (
    DELETED,
    KINDS,
    LIVE,
    ForumWorld,
    Post,
    Reaction,
    Thread,
    User,
    random_body,
    random_title,
)

NEW_WINDOW = 29 * MINUTE


@dataclass(frozen=True)
class Mutation:
    """What one generation changed, by id."""

    generation: int  # the generation this mutation made
    now: datetime  # the clock after it
    board: str  # the board that got new threads
    new_threads: tuple[int, ...]
    new_user: int  # the user who joined to open the first new thread
    replied_thread: int
    new_replies: tuple[int, ...]
    reacted_post: int
    new_reactions: tuple[int, ...]
    rescored_post: int
    score_before: int
    score_after: int
    deleted_thread: int

    def as_json(self) -> dict[str, object]:
        return {k: (v.isoformat() if isinstance(v, datetime) else
                    list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()}


def next_generation(world: ForumWorld,
                    advance: timedelta = timedelta(0)) -> tuple[ForumWorld, Mutation]:
    """The world one generation on, with its clock moved by ``advance`` (whole minutes)."""
    seconds = advance.total_seconds()
    if seconds < 0 or seconds % MINUTE:
        raise ValueError(f"advance={advance}: move the clock forward by whole minutes "
                         f"(the forum's times are whole minutes)")
    return _Mutator(replace(world, now=world.now + advance, generation=world.generation + 1)
                    ).run()


class _Mutator:
    """Applies one generation's changes to a copy of the world's tables."""

    def __init__(self, world: ForumWorld) -> None:
        self.world = world
        self.rnd = random.Random(f"forum:{world.seed}:mutation:{world.generation}")
        self.threads = dict(world.threads)
        self.posts = dict(world.posts)
        self.users = dict(world.users)
        self.reactions = dict(world.reactions)
        self.boards = dict(world.boards)
        self.next_post = max(world.posts, default=0) + 1
        self.uids = sorted(world.users)

    def run(self) -> tuple[ForumWorld, Mutation]:
        live = [t for t in self.world.listed() if t.status == LIVE]
        board = self.growing_board()
        deleted = self.doomed_thread(board, live)
        replied = self.rnd.choice([t for t in self.world.board_page(
            next(iter(self.boards)), 1) if t.status == LIVE and t.id != deleted.id])
        spared = [p for t in live if t.id not in (deleted.id, replied.id)
                  for p in self.world.posts_of(t)]
        rescored = self.rnd.choice([p for p in spared if p.score < 1000])
        reacted = self.rnd.choice([p for p in spared
                                   if p.id in self.reactions and p.id != rescored.id])
        new_user = self.join()
        new_threads = self.open_threads(board, new_user)
        new_replies = self.reply(replied)
        new_reactions = self.react(reacted)
        score_after = 100 * self.rnd.randint(11, 99)
        self.posts[rescored.id] = replace(rescored, score=score_after)
        self.delete(deleted)
        world = replace(self.world, threads=self.threads, posts=self.posts, users=self.users,
                        reactions=self.reactions, boards=self.boards)
        return world, Mutation(
            world.generation, world.now, board, new_threads, new_user, replied.id,
            new_replies, reacted.id, new_reactions, rescored.id, rescored.score, score_after,
            deleted.id)

    def growing_board(self) -> str:
        """The first board whose list does not end on a full page (else the first)."""
        size = self.world.shape.list_page_size
        ragged = [b.id for b in self.boards.values() if len(b.threads) % size]
        return ragged[0] if ragged else next(iter(self.boards))

    def doomed_thread(self, growing: str, live: list[Thread]) -> Thread:
        """A live single-board thread on the last page of a board other than ``growing``,
        whose authors all post in other threads; the last board's first."""
        authors = Counter(p.author_id for t in live for p in self.world.posts_of(t))
        for board in reversed(list(self.boards.values())):
            if board.id == growing:
                continue
            last = self.world.board_page(board.id, self.world.board_pages(board.id))
            for thread in reversed(last):
                own = Counter(p.author_id for p in self.world.posts_of(thread))
                if (thread.status == LIVE and len(thread.boards) == 1 and len(last) > 1
                        and all(authors[a] > n for a, n in own.items())):
                    return thread
        raise ValueError("no thread can be deleted without moving rows or users; "
                         "give the shape more threads per board")

    def join(self) -> int:
        uid = max(self.users) + 1
        when = (self.world.now - timedelta(minutes=self.rnd.randint(30, 120))).date()
        self.users[uid] = User(uid, f"Newcomer {uid}", when, 1)
        return uid

    def open_threads(self, board_id: str, first_author: int) -> tuple[int, ...]:
        board, size = self.boards[board_id], self.world.shape.list_page_size
        count = size - len(board.threads) % size + 2 if len(board.threads) % size else 2
        new = tuple(range(max(self.threads) + 1, max(self.threads) + 1 + count))
        for tid in new:
            author = first_author if tid == new[0] else self.rnd.choice(self.uids)
            replies = [self.rnd.choice(self.uids) for _ in range(self.rnd.randint(0, 2))]
            self.threads[tid] = Thread(tid, random_title(self.rnd), author, (board_id,),
                                       posts=self.add_posts(tid, [author, *replies], NEW_WINDOW))
        self.boards[board_id] = replace(board, threads=board.threads + new)
        return new

    def reply(self, thread: Thread) -> tuple[int, ...]:
        n, size = len(thread.posts), self.world.shape.posts_page_size
        count = size - n % size + 1 if n % size else 1
        newest = self.age_of(self.posts[thread.posts[-1]].created_at)
        added = self.add_posts(thread.id, [self.rnd.choice(self.uids) for _ in range(count)],
                               newest)
        self.threads[thread.id] = replace(thread, posts=thread.posts + added)
        return added

    def react(self, post: Post) -> tuple[int, ...]:
        old, size = self.reactions[post.id], self.world.shape.reactions_page_size
        count = size - len(old) % size + 1 if len(old) % size else 1
        first = max(r.id for rs in self.reactions.values() for r in rs) + 1
        ages = self.ages(count, self.age_of(old[-1].created_at))
        added = tuple(Reaction(first + i, post.id, self.rnd.choice(self.uids),
                               self.rnd.choice(KINDS), self.world.now - timedelta(seconds=age))
                      for i, age in enumerate(ages))
        self.reactions[post.id] = old + added
        return tuple(r.id for r in added)

    def delete(self, thread: Thread) -> None:
        self.threads[thread.id] = replace(thread, status=DELETED)
        for bid in thread.boards:
            board = self.boards[bid]
            self.boards[bid] = replace(board, threads=tuple(
                t for t in board.threads if t != thread.id))

    def add_posts(self, thread_id: int, authors: list[int], oldest: int) -> tuple[int, ...]:
        """Posts by ``authors`` in a row, none older than ``oldest`` seconds (nor than
        ``NEW_WINDOW``): their ids."""
        ids = []
        for author, age in zip(authors, self.ages(len(authors), oldest), strict=True):
            self.posts[self.next_post] = Post(
                self.next_post, thread_id, author, random_body(self.rnd),
                self.world.now - timedelta(seconds=age), self.rnd.randint(0, 20))
            ids.append(self.next_post)
            self.next_post += 1
        return tuple(ids)

    def ages(self, count: int, oldest: int) -> list[int]:
        """``count`` whole-minute ages, oldest first, none older than ``oldest`` seconds."""
        top = min(oldest, NEW_WINDOW) // MINUTE
        return sorted((MINUTE * self.rnd.randint(0, top) for _ in range(count)), reverse=True)

    def age_of(self, moment: datetime) -> int:
        return int((self.world.now - moment).total_seconds())
