from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

import pytest

from sandbox.forum.expected import expected
from sandbox.forum.formats import ago
from sandbox.forum.world import DELETED, LIVE, MISSING, SHAPES, ForumShape, ForumWorld

WORLD = ForumWorld.build()


def test_the_same_seed_and_clock_build_the_same_forum() -> None:
    assert ForumWorld.build(seed=3) == ForumWorld.build(seed=3)
    assert ForumWorld.build(seed=3).posts != ForumWorld.build(seed=4).posts


def test_boards_list_the_rows_their_shape_asks_for_oldest_first() -> None:
    for board, rows in zip(WORLD.boards.values(), WORLD.shape.boards, strict=True):
        assert len(board.threads) == rows
        assert list(board.threads) == sorted(board.threads)


def test_cross_posted_threads_are_one_thread_listed_by_two_boards() -> None:
    listings = Counter(tid for b in WORLD.boards.values() for tid in b.threads)
    crossed = {tid for tid, n in listings.items() if n == 2}
    assert len(crossed) == WORLD.shape.crossposts
    assert {tid for tid in crossed if len(WORLD.threads[tid].boards) == 2} == crossed
    assert len(WORLD.listed()) == sum(WORLD.shape.boards) - WORLD.shape.crossposts


def test_dead_threads_are_listed_and_hold_no_posts() -> None:
    dead = [t for t in WORLD.listed() if t.status != LIVE]
    assert Counter(t.status for t in dead) == {MISSING: 2, DELETED: 2}
    assert all(not t.posts and len(t.boards) == 1 for t in dead)


def test_generation_0_writes_every_form_of_time_a_crawler_must_read() -> None:
    written = {ago(p.created_at, WORLD.now).split(" ")[-2] for p in WORLD.posts.values()}
    assert {"minutes", "hours", "days", "at"} <= written
    assert any(ago(p.created_at, WORLD.now).startswith("yesterday at")
               for p in WORLD.posts.values())


def test_scores_cover_both_ways_of_writing_them() -> None:
    scores = [p.score for p in WORLD.posts.values()]
    assert min(scores) < 0 < max(scores)
    assert any(s >= 1000 for s in scores) and all(s % 100 == 0 for s in scores if s >= 1000)


def test_some_posts_have_no_reactions_and_some_several_pages() -> None:
    counts = [len(WORLD.reactions.get(pid, ())) for pid in WORLD.posts]
    size = WORLD.shape.reactions_page_size
    assert counts.count(0) > len(counts) / 4
    assert any(n > 2 * size for n in counts)
    assert any(n == size for n in counts) or any(n == 2 * size for n in counts)


@pytest.mark.parametrize(("shape", "problem"), [
    ({"boards": (51,)}, "two boards"),
    ({"boards": (51, 30)}, "exact multiple"),
    ({"users": 1}, "users"),
    ({"quiet_posts": 1.0}, "quiet_posts"),
])
def test_a_shape_that_cannot_hold_the_forums_cases_is_refused(
        shape: dict[str, object], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        ForumShape(**shape)  # type: ignore[arg-type]


def test_a_clock_off_the_minute_is_refused() -> None:
    with pytest.raises(ValueError, match="whole minute"):
        ForumWorld.build(now=datetime(2026, 11, 20, 12, 0, 30, tzinfo=UTC))


def test_the_small_shape_is_a_few_hundred_requests() -> None:
    assert 200 <= expected(WORLD).requests <= 1000


def test_the_large_shape_is_big_enough_for_the_deep_chain_benchmark() -> None:
    large = expected(ForumWorld.build(shape=SHAPES["large"]))
    assert large.requests >= 20_000
    assert large.items >= 60_000
