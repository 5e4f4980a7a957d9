"""A mutation changes what issue 19 lists, and ``diff`` says exactly what a recrawl finds."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator
from datetime import timedelta

import pytest

from sandbox.forum.expected import COLLECTIONS, changed_pages, diff, expected
from sandbox.forum.mutations import next_generation
from sandbox.forum.pages import reactions_url, thread_url
from sandbox.forum.site import ForumSite
from sandbox.forum.world import DELETED, ForumWorld
from sandbox.server import SandboxServer, Site
from sandbox.world import World
from tests.sandbox.forum.reading import walk

BEFORE = ForumWorld.build()
AFTER, MUTATION = next_generation(BEFORE)


def test_new_threads_add_exactly_one_page_to_one_board() -> None:
    board = MUTATION.board
    assert AFTER.board_pages(board) == BEFORE.board_pages(board) + 1
    assert AFTER.boards[board].threads[-len(MUTATION.new_threads):] == MUTATION.new_threads
    assert AFTER.users[MUTATION.new_user].id == AFTER.threads[MUTATION.new_threads[0]].author_id


def test_an_old_thread_gets_a_new_page_of_replies() -> None:
    thread = MUTATION.replied_thread
    assert (len(AFTER.thread_pages(AFTER.threads[thread]))
            == len(BEFORE.thread_pages(BEFORE.threads[thread])) + 1)
    assert thread in BEFORE.boards[next(iter(BEFORE.boards))].threads[:25]


def test_an_old_post_gets_a_new_page_of_reactions() -> None:
    post = MUTATION.reacted_post
    assert len(AFTER.reaction_pages(post)) == len(BEFORE.reaction_pages(post)) + 1


def test_the_deleted_thread_is_gone_from_its_board_and_no_other_row_moves() -> None:
    thread = BEFORE.threads[MUTATION.deleted_thread]
    assert AFTER.threads[thread.id].status == DELETED
    for bid in thread.boards:
        before, after = BEFORE.boards[bid].threads, AFTER.boards[bid].threads
        assert after == tuple(t for t in before if t != thread.id)
        assert before.index(thread.id) >= (BEFORE.board_pages(bid) - 1) * 25


def test_the_clock_stays_unless_asked_and_times_stay_whole_minutes() -> None:
    assert AFTER.now == BEFORE.now == MUTATION.now
    later, _ = next_generation(BEFORE, timedelta(days=1, minutes=7))
    assert later.now == BEFORE.now + timedelta(days=1, minutes=7)
    with pytest.raises(ValueError, match="whole minutes"):
        next_generation(BEFORE, timedelta(seconds=90))


def test_the_diff_names_exactly_what_the_mutation_did() -> None:
    changes = diff(BEFORE, AFTER)
    deleted = BEFORE.threads[MUTATION.deleted_thread]
    assert set(changes["threads"].new) == set(MUTATION.new_threads)
    assert set(changes["threads"].changed) == {MUTATION.replied_thread}
    assert set(changes["threads"].gone) == {deleted.id}
    new_posts = {p for t in MUTATION.new_threads for p in AFTER.threads[t].posts}
    assert set(changes["posts"].new) == new_posts | set(MUTATION.new_replies)
    assert set(changes["posts"].changed) == {MUTATION.rescored_post}
    assert changes["posts"].changed[MUTATION.rescored_post][1]["score"] == MUTATION.score_after
    assert set(changes["posts"].gone) == set(deleted.posts)
    assert set(changes["reactions"].new) == set(MUTATION.new_reactions)
    assert set(changes["reactions"].gone) == {
        r.id for p in deleted.posts for r in BEFORE.reactions.get(p, ())}
    assert changes["users"].counts() == {"new": 1, "changed": 0, "gone": 0}
    assert set(changes["boards"].changed) == {MUTATION.board, *deleted.boards}


def test_every_generation_is_exact_and_each_diff_carries_one_into_the_next() -> None:
    world = BEFORE
    for _ in range(3):
        nxt, _ = next_generation(world, timedelta(hours=5))
        changes = diff(world, nxt)
        old, new = expected(world).records, expected(nxt).records
        for name in COLLECTIONS:
            assert changes[name].apply(old[name]) == new[name], name
        world = nxt


@pytest.fixture
def server() -> Iterator[SandboxServer]:
    running = SandboxServer(Site(World(), forum=ForumSite(ForumWorld.build())))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


def test_mutating_the_running_server_serves_the_next_generation_exactly(
        server: SandboxServer) -> None:
    first = walk(server.base_url)
    request = urllib.request.Request(f"{server.base_url}/forum/__admin/mutate?advance_s=7200",
                                     method="POST")
    with urllib.request.urlopen(request, timeout=10) as response:
        done = json.loads(response.read())
    second = walk(server.base_url)  # every page now reads times two hours further back
    after = server.site.forum.world
    assert done["generation"] == after.generation == 1
    assert done["now"] == "2026-11-20T14:00:00+00:00"
    truth = expected(after)
    assert second.records == truth.records and second.failures == truth.failures
    changes = diff(BEFORE, after)
    for name in COLLECTIONS:
        assert changes[name].apply(first.records[name]) == second.records[name], name


def test_the_pages_that_change_are_the_mutations_own_and_the_lists_that_show_them() -> None:
    changed = changed_pages(BEFORE, AFTER)
    deleted = BEFORE.threads[MUTATION.deleted_thread]
    growing, pages = MUTATION.board, BEFORE.board_pages(MUTATION.board)
    old_pages = {url for url, (was, _) in changed.items() if was == 200}
    assert old_pages == {
        "/forum/",  # thread counts
        "/forum/b/general",  # the replied thread's row shows its new reply count
        f"/forum/b/{growing}" + (f"?page={pages}" if pages > 1 else ""),  # fills, gains next
        f"/forum/b/{deleted.boards[0]}" + _page(BEFORE.board_pages(deleted.boards[0])),
        thread_url(MUTATION.replied_thread),  # its reply count; its last page gains a next
        *_last_page(BEFORE, MUTATION.replied_thread),
        _page_of(BEFORE, MUTATION.rescored_post),
        *_last_reactions(BEFORE, MUTATION.reacted_post),
        thread_url(deleted.id),
        *{url for p in deleted.posts for url in _all_reactions(BEFORE, p)},
    }
    assert {changed[thread_url(deleted.id)], changed[reactions_url(deleted.posts[0])]} == {
        (200, 410)}
    assert all(was == 404 for url, (was, _) in changed.items() if url not in old_pages)


def _page(n: int) -> str:
    return f"?page={n}" if n > 1 else ""


def _last_page(world: ForumWorld, thread: int) -> set[str]:
    pages = world.thread_pages(world.threads[thread])
    return {thread_url(thread, pages[-2][-1].id) if len(pages) > 1 else thread_url(thread)}


def _page_of(world: ForumWorld, post: int) -> str:
    thread = world.threads[world.posts[post].thread_id]
    for i, page in enumerate(world.thread_pages(thread)):
        if any(p.id == post for p in page):
            return thread_url(thread.id, world.thread_pages(thread)[i - 1][-1].id if i else None)
    raise AssertionError(post)


def _all_reactions(world: ForumWorld, post: int) -> list[str]:
    pages = world.reaction_pages(post)
    return [reactions_url(post, None)] + [reactions_url(post, p[-1].id) for p in pages[:-1]]


def _last_reactions(world: ForumWorld, post: int) -> list[str]:
    return _all_reactions(world, post)[-1:]
