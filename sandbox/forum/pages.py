"""The forum's pages, rendered from a world: HTML for people, JSON for the app's API.

Each function returns the body's bytes; ``site.py`` picks one by route. What a crawler
reads where (the CSS classes are the page's contract, as a real site's markup is):

    /forum/                         li.board[data-board-id]: a.board-link, .description,
                                    .thread-count
    /forum/b/<board>[?page=N]       tr.thread[data-thread-id]: .title a[href], .author
                                    (name, data-user-id; not a link), .replies;
                                    link/a[rel=next] on every page but the last
    /forum/t/<id>[?after=C]         nav a.board[data-board-id] (every board listing it),
                                    h1.thread-title; on the first page only, .thread-meta
                                    with a.author (the opener) and .reply-count (so new
                                    replies change the first and last pages, not the
                                    middle ones); div.post[data-post-id] each with
                                    a.author[data-user-id] (href: the profile API),
                                    .time (relative), .score ("1.2k"), .body,
                                    a.reactions (href: the reactions API);
                                    link/a[rel=next] to ?after=<cursor> but on the last page
    /forum/api/users/<id>           {"id", "name", "joined", "reputation"}
    /forum/api/posts/<id>/reactions {"post_id", "reactions": [{"id", "user_id", "kind",
                                    "created_at"}], "next_cursor": str | null}

Text in HTML is escaped (titles and bodies hold ``&``, quotes and ``<b>``); a crawler
reads it unescaped. A pager says "Page N", not "of M", so a page's bytes change only
when its own rows or links do (a recrawl's change detection sees only real changes).
"""

from __future__ import annotations

import json
from html import escape
from typing import Any

from sandbox.forum import cursors
from sandbox.forum.formats import ago, iso, score_text
from sandbox.forum.world import ForumWorld, Post, Thread

SITE_NAME = "Sandbox Forum"


def board_url(board_id: str, page: int = 1) -> str:
    return f"/forum/b/{board_id}" + (f"?page={page}" if page > 1 else "")


def thread_url(thread_id: int, after: int | None = None) -> str:
    cursor = f"?after={cursors.encode('t', thread_id, after)}" if after is not None else ""
    return f"/forum/t/{thread_id}{cursor}"


def user_url(user_id: int) -> str:
    return f"/forum/api/users/{user_id}"


def reactions_url(post_id: int, after: int | None = None) -> str:
    cursor = f"?cursor={cursors.encode('r', post_id, after)}" if after is not None else ""
    return f"/forum/api/posts/{post_id}/reactions{cursor}"


def index(world: ForumWorld) -> bytes:
    rows = "".join(
        f'<li class="board" data-board-id="{b.id}"><a class="board-link" '
        f'href="{board_url(b.id)}">{escape(b.name)}</a> <p class="description">'
        f'{escape(b.description)}</p> <span class="thread-count">{len(b.threads)}</span> '
        f'threads</li>\n'
        for b in world.boards.values())
    return _html(SITE_NAME, "", f'<h1>{SITE_NAME}</h1>\n<ul class="boards">\n{rows}</ul>')


def board_page(world: ForumWorld, board_id: str, page: int) -> bytes:
    board, last = world.boards[board_id], world.board_pages(board_id)
    links = _links(board_url(board_id, page - 1) if page > 1 else None,
                   board_url(board_id, page + 1) if page < last else None)
    rows = "".join(
        f'<tr class="thread" data-thread-id="{t.id}"><td class="title"><a href="'
        f'{thread_url(t.id)}">{escape(t.title)}</a></td><td class="author" data-user-id="'
        f'{t.author_id}">{escape(world.users[t.author_id].name)}</td>'
        f'<td class="replies">{t.reply_count}</td></tr>\n'
        for t in world.board_page(board_id, page))
    crumb = f'<a href="{board_url(board_id)}">{escape(board.name)}</a>'
    body = (f'{_crumbs(crumb)}<h1 class="board-name">{escape(board.name)}</h1>\n'
            f'<table class="threads">\n{rows}</table>\n'
            f'{_pager(links, f"Page {page}")}')
    return _html(f"{board.name} - page {page} - {SITE_NAME}", _head_links(links), body)


def thread_page(world: ForumWorld, thread: Thread, after: int | None) -> bytes:
    """The page of a live thread after post ``after`` (None: the first page)."""
    pages = world.thread_pages(thread)
    page = _page_after([p.id for p in world.posts_of(thread)], after, world.shape.posts_page_size)
    shown = pages[page]
    links = _links(None, thread_url(thread.id, shown[-1].id) if page + 1 < len(pages) else None)
    boards = " ".join(f'<a class="board" data-board-id="{bid}" href="{board_url(bid)}">'
                      f'{escape(world.boards[bid].name)}</a>' for bid in thread.boards)
    opener = world.users[thread.author_id]
    posts = "".join(_post(world, p, first=p.id == thread.posts[0]) for p in shown)
    meta = (f'<p class="thread-meta">Started by <a class="author" data-user-id="{opener.id}" '
            f'href="{user_url(opener.id)}">{escape(opener.name)}</a>, '
            f'<span class="reply-count">{thread.reply_count}</span> replies</p>\n'
            if page == 0 else "")
    body = (f'{_crumbs(boards)}<article class="thread" data-thread-id="{thread.id}">\n'
            f'<h1 class="thread-title">{escape(thread.title)}</h1>\n'
            f'{meta}{posts}</article>\n{_pager(links, f"Page {page + 1}")}')
    return _html(f"{thread.title} - {SITE_NAME}", _head_links(links), body)


def _post(world: ForumWorld, post: Post, first: bool) -> str:
    author = world.users[post.author_id]
    return (f'<div class="post{" op" if first else ""}" id="post-{post.id}" '
            f'data-post-id="{post.id}">\n<header><a class="author" data-user-id="{author.id}" '
            f'href="{user_url(author.id)}">{escape(author.name)}</a> '
            f'<span class="time">{ago(post.created_at, world.now)}</span> '
            f'<span class="score" title="score">{score_text(post.score)}</span></header>\n'
            f'<div class="body"><p>{escape(post.body)}</p></div>\n'
            f'<footer><a class="reactions" href="{reactions_url(post.id)}">Reactions</a>'
            f'</footer>\n</div>\n')


def missing(title: str, text: str) -> bytes:
    return _html(f"{title} - {SITE_NAME}", "", f"<h1>{title}</h1>\n<p>{escape(text)}</p>")


def user(world: ForumWorld, user_id: int) -> bytes:
    u = world.users[user_id]
    return _json({"id": u.id, "name": u.name, "joined": u.joined.isoformat(),
                  "reputation": u.reputation})


def reactions(world: ForumWorld, post_id: int, after: int | None) -> bytes:
    """The page of ``post_id``'s reactions after reaction ``after`` (None: the first)."""
    pages = world.reaction_pages(post_id)
    page = _page_after([r.id for r in world.reactions.get(post_id, ())], after,
                       world.shape.reactions_page_size)
    chunk = pages[page]
    return _json({
        "post_id": post_id,
        "reactions": [{"id": r.id, "user_id": r.user_id, "kind": r.kind,
                       "created_at": iso(r.created_at)} for r in chunk],
        "next_cursor": cursors.encode("r", post_id, chunk[-1].id)
        if page + 1 < len(pages) else None,
    })


def _page_after(ids: list[int], after: int | None, size: int) -> int:
    """The index of the page that starts after entry ``after``; ``ValueError`` unless the
    site could have written that cursor (the last entry of a page that has a next)."""
    if after is None:
        return 0
    start = ids.index(after) + 1 if after in ids else -1
    if start <= 0 or start % size or start >= len(ids):
        raise ValueError(f"no page starts after entry {after}")
    return start // size


def _json(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload).encode()


def _links(prev: str | None, next_: str | None) -> dict[str, str]:
    return {rel: href for rel, href in (("prev", prev), ("next", next_)) if href}


def _head_links(links: dict[str, str]) -> str:
    return "".join(f'<link rel="{rel}" href="{href}">' for rel, href in links.items())


def _pager(links: dict[str, str], label: str) -> str:
    prev = f'<a rel="prev" href="{links["prev"]}">Previous</a> ' if "prev" in links else ""
    nxt = f' <a rel="next" href="{links["next"]}">Next</a>' if "next" in links else ""
    return f'<nav class="pager">{prev}<span class="page">{label}</span>{nxt}</nav>\n'


def _crumbs(rest: str) -> str:
    return f'<nav class="breadcrumbs"><a href="/forum/">Forum</a> &rsaquo; {rest}</nav>\n'


def _html(title: str, head: str, body: str) -> bytes:
    return (f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>{escape(title)}</title>{head}</head>\n<body>\n{body}</body></html>\n'
            ).encode()
