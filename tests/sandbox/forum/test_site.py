from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest
from parsel import Selector

from sandbox.calls import Answer, Call
from sandbox.forum.expected import expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import DELETED, LIVE, MISSING, ForumWorld

WORLD = ForumWorld.build()
SITE = ForumSite(WORLD)
DATE = "Fri, 20 Nov 2026 12:00:00 GMT"


def get(url: str, site: ForumSite = SITE) -> Answer:
    path, _, query = url.partition("?")
    return site.answer(Call(path, dict(p.split("=", 1) for p in query.split("&") if p)))


def page(url: str) -> Selector:
    answer = get(url)
    assert answer.status == 200, url
    return Selector(text=answer.body.decode())


def reactions(url: str) -> dict[str, Any]:
    answer = get(url)
    assert answer.status == 200, url
    return dict(json.loads(answer.body))


def board_pages(board: str) -> list[Selector]:
    """Every page of a board's list, following rel=next."""
    out, url = [], f"/forum/b/{board}"
    while url:
        out.append(page(url))
        url = out[-1].css('a[rel="next"]::attr(href)').get() or ""
    return out


def test_every_answer_is_dated_by_the_forums_clock_not_the_machines() -> None:
    for url in [*sorted(expected(WORLD).urls)[:50], "/forum/nowhere", "/forum/t/1"]:
        assert dict(get(url).headers)["Date"] == DATE, url


def test_board_lists_hold_25_rows_a_page_with_next_on_every_page_but_the_last() -> None:
    for board in WORLD.boards:
        pages = board_pages(board)
        rows = [len(p.css("tr.thread")) for p in pages]
        assert rows[:-1] == [25] * (len(pages) - 1) and 1 <= rows[-1] <= 25
        assert [bool(p.css('link[rel="next"]')) for p in pages] == [True] * (len(pages) - 1) + [
            False]
        assert sum(rows) == len(WORLD.boards[board].threads)


def test_the_board_of_an_exact_multiple_ends_on_a_full_page_and_has_no_empty_page() -> None:
    pages = board_pages("general")
    assert len(WORLD.boards["general"].threads) == 50 and len(pages) == 2
    assert len(pages[-1].css("tr.thread")) == 25
    assert get("/forum/b/general?page=3").status == 404


def test_rows_show_title_author_and_reply_count() -> None:
    row = page("/forum/b/help").css("tr.thread")[0]
    thread = WORLD.threads[int(row.attrib["data-thread-id"])]
    assert row.css(".title a::text").get() == thread.title
    assert row.css(".title a::attr(href)").get() == f"/forum/t/{thread.id}"
    assert row.css(".author::text").get() == WORLD.users[thread.author_id].name
    assert row.css(".replies::text").get() == str(thread.reply_count)


def test_a_cross_posted_thread_is_listed_by_both_its_boards_with_one_url() -> None:
    thread = next(t for t in WORLD.listed() if len(t.boards) == 2)
    for board in thread.boards:
        hrefs = [h for p in board_pages(board) for h in p.css(".title a::attr(href)").getall()]
        assert hrefs.count(f"/forum/t/{thread.id}") == 1
    shown = page(f"/forum/t/{thread.id}").css("nav a.board::attr(data-board-id)").getall()
    assert sorted(shown) == sorted(thread.boards)


def test_a_long_thread_pages_by_opaque_after_cursors_opening_post_first() -> None:
    thread = max(WORLD.listed(), key=lambda t: len(t.posts))
    url, seen = f"/forum/t/{thread.id}", []
    while url:
        sel = page(url)
        seen += [int(p) for p in sel.css("div.post::attr(data-post-id)").getall()]
        url = sel.css('a[rel="next"]::attr(href)').get() or ""
        assert not url or ("after=" in url and str(seen[-1]) not in url)  # opaque
    assert seen == list(thread.posts) and len(seen) > 2 * WORLD.shape.posts_page_size
    assert page(f"/forum/t/{thread.id}").css("div.post")[0].attrib["class"] == "post op"


@pytest.mark.parametrize("cursor", ["nonsense", "dDEwMDE6NTAwMDE", ""])
def test_a_cursor_the_site_never_wrote_is_not_found(cursor: str) -> None:
    thread = max(WORLD.listed(), key=lambda t: len(t.posts))
    assert get(f"/forum/t/{thread.id}?after={cursor}").status == 404


def test_reactions_page_by_next_cursor_until_null() -> None:
    pid = max(WORLD.reactions, key=lambda p: len(WORLD.reactions[p]))
    api = f"/forum/api/posts/{pid}/reactions"
    url, seen = api, []
    while url:
        body = reactions(url)
        seen += [r["id"] for r in body["reactions"]]
        url = body["next_cursor"] and f"{api}?cursor={body['next_cursor']}"
    assert seen == [r.id for r in WORLD.reactions[pid]] and len(seen) > 20


def test_a_post_nobody_reacted_to_answers_one_empty_page() -> None:
    pid = next(p for p in WORLD.posts if p not in WORLD.reactions)
    assert reactions(f"/forum/api/posts/{pid}/reactions") == {
        "post_id": pid, "reactions": [], "next_cursor": None}


def test_a_full_last_page_of_reactions_has_a_null_cursor() -> None:
    size = WORLD.shape.reactions_page_size
    pid = next(p for p, rs in WORLD.reactions.items() if len(rs) == size)
    body = reactions(f"/forum/api/posts/{pid}/reactions")
    assert len(body["reactions"]) == size and body["next_cursor"] is None


def test_profiles_are_json() -> None:
    assert json.loads(get("/forum/api/users/3").body).keys() == {
        "id", "name", "joined", "reputation"}


def test_listed_dead_threads_answer_404_or_410() -> None:
    for thread in WORLD.listed():
        status = get(f"/forum/t/{thread.id}").status
        assert status == {LIVE: 200, MISSING: 404, DELETED: 410}[thread.status]


@pytest.mark.parametrize("url", [
    "/forum/b/nowhere", "/forum/b/general?page=0", "/forum/b/general?page=x",
    "/forum/t/99999", "/forum/api/users/99999", "/forum/api/posts/1/reactions",
    "/forum/static/app.js", "/forum/t/1001/extra"])
def test_anything_else_under_forum_is_not_found(url: str) -> None:
    assert get(url).status == 404


def test_mutate_over_post_moves_the_served_world_on_and_keeps_the_clock() -> None:
    site = ForumSite(ForumWorld.build())
    answer = site.answer(Call("/forum/__admin/mutate", method="POST"))
    assert answer.status == 200 and json.loads(answer.body)["generation"] == 1
    assert site.world.generation == 1 and site.world.now == WORLD.now
    deleted = json.loads(answer.body)["deleted_thread"]
    assert get(f"/forum/t/{deleted}", site).status == 410


def test_mutate_can_move_the_clock_and_refuses_a_bad_amount() -> None:
    site = ForumSite(ForumWorld.build())
    assert site.answer(Call("/forum/__admin/mutate", {"advance_s": "3600"},
                            method="POST")).status == 200
    assert site.world.now == WORLD.now + timedelta(hours=1)
    refused = site.answer(Call("/forum/__admin/mutate", {"advance_s": "30"}, method="POST"))
    assert refused.status == 400 and b"whole minutes" in refused.body
    assert site.world.generation == 1
