"""The forum's chain: boards -> board pages -> threads -> authors, reactions; and its recrawl."""

from chains.runtime.model import Chain, Link, Step
from external_interface.dedup import RecrawlPolicy

forum = Chain(
    name="forum", start="boards",
    steps={"boards": Step(task="forum.web.boards"),
           "board": Step(task="forum.web.board", inline_next=20),
           "thread": Step(task="forum.web.thread", batch_size=50, inline_next=20),
           "user": Step(task="forum.api.user", batch_size=200),
           "reactions": Step(task="forum.api.reactions", batch_size=200, inline_next=20)},
    links=[Link(src="boards", records="board_pages", dst="board", map={"url": "url"}),
           Link(src="board", records="threads", dst="thread", map={"url": "url"}),
           Link(src="thread", records="posts", dst="user", map={"author_id": "author_id"}),
           Link(src="thread", records="posts", dst="reactions", map={"post_id": "post_id"})])

forum_recrawl = forum.recrawling(
    "forum_recrawl", boards=RecrawlPolicy(volatile=True), thread=RecrawlPolicy(volatile=True),
    board=RecrawlPolicy(ttl_s=86400, first_page_volatile=True, last_page_volatile=True),
    user=RecrawlPolicy(ttl_s=86400), reactions=RecrawlPolicy(ttl_s=86400, last_page_volatile=True))
