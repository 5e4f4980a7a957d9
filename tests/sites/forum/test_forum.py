"""The forum's steps on saved pages (tests/sites/forum/pages/, served by the sandbox on
Fri, 20 Nov 2026 12:00:00 GMT: the Date every relative time is read against)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from chains.api import Page
from external_interface.http import Response
from sites.forum import Author, Post, ReactionPage, Thread, board, boards, reactions, thread, user

PAGES = Path(__file__).resolve().parent / "pages"
BASE = "http://127.0.0.1:8765"
DATE = "Fri, 20 Nov 2026 12:00:00 GMT"


def saved(name: str, path: str) -> Response:
    kind = "application/json" if name.endswith(".json") else "text/html; charset=utf-8"
    return Response(f"{BASE}{path}", 200, {"Date": DATE, "Content-Type": kind},
                    (PAGES / name).read_bytes())


def test_the_index_yields_every_board_and_its_first_page() -> None:
    parsed = boards(Page(), saved("index.html", "/forum/"))
    assert [b.board_id for b in parsed.items] == ["general", "help", "showcase"]
    assert parsed.items[1].name == "Help & Support"  # unescaped
    assert [b.thread_count for b in parsed.items] == [50, 31, 9]
    assert parsed.follow["board_pages"][0] == {"url": f"{BASE}/forum/b/general"}


def test_a_board_page_follows_its_threads_and_its_next_page() -> None:
    parsed = board(Page(), saved("board_first.html", "/forum/b/general"))
    threads = parsed.follow["threads"]
    assert len(threads) == 25 and threads[0]["url"].startswith(f"{BASE}/forum/t/")
    assert parsed.next_params() == {"url": f"{BASE}/forum/b/general?page=2"}


def test_the_last_board_page_has_no_next_page() -> None:
    parsed = board(Page(), saved("board_last.html", "/forum/b/general?page=2"))
    assert parsed.next_page is None and len(parsed.follow["threads"]) == 25


def test_a_threads_first_page_yields_the_thread_and_its_posts() -> None:
    parsed = thread(Page(), saved("thread_first.html", "/forum/t/1017"))
    [record] = [i for i in parsed.items if isinstance(i, Thread)]
    posts = [i for i in parsed.items if isinstance(i, Post)]
    assert record.model_dump() == {"thread_id": 1017, "title": record.title, "author_id": 20,
                                   "boards": record.boards, "reply_count": 22}
    assert len(posts) == 10 and {p.model_dump()["thread_id"] for p in posts} == {1017}
    assert parsed.next_params() == {"url": f"{BASE}/forum/t/1017?after=dDEwMTc6NTAwNDQ"}


def test_post_times_are_read_against_the_servers_date_and_scores_in_full() -> None:
    posts = thread(Page(), saved("thread_first.html", "/forum/t/1017")).items
    first, second = (p.model_dump() for p in posts[:2])
    assert first["post_id"] == 50025 and first["score"] == 1
    assert first["created_at"] == datetime(2026, 1, 2, 12, 0, tzinfo=UTC)  # "322 days ago"
    assert second["score"] == 2000  # "2k"


def test_a_threads_later_page_yields_posts_only() -> None:
    parsed = thread(Page(), saved("thread_second.html", "/forum/t/1017?after=dDEwMTc6NTAwNDQ"))
    assert {i.collection for i in parsed.items} == {"posts"}
    assert parsed.next_page is not None


def test_a_profile_yields_one_user() -> None:
    [found] = user(Author(author_id=1), saved("user_1.json", "/forum/api/users/1")).items
    assert found.model_dump() == {"user_id": 1, "name": "Dennis Müller",
                                  "joined": "2017-01-06", "reputation": 1143}


def test_reactions_are_paged_by_the_apis_cursor() -> None:
    page = ReactionPage(post_id=50004)
    parsed = reactions(page, saved("reactions_first.json", "/forum/api/posts/50004/reactions"))
    assert len(parsed.items) == 10 and parsed.items[0].model_dump() == {
        "reaction_id": 7, "post_id": 50004, "user_id": 20, "kind": "sad",
        "created_at": "2025-03-08T18:53:00Z"}
    next_params = parsed.next_params()
    assert next_params is not None and next_params["post_id"] == 50004 and next_params["cursor"]
