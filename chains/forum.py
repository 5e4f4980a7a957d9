"""The forum's chain: boards -> board pages -> threads -> authors, reactions; and its recrawl."""

from chains.api import Chain, Link, RecrawlPolicy, Step
from sites.forum import board, boards, reactions, thread, user

forum = Chain("forum", start=boards, steps=[
    boards, Step(board, inline_next=20), Step(thread, batch_size=50, inline_next=20),
    Step(user, batch_size=200), Step(reactions, batch_size=200, inline_next=20)],
    links=[Link(boards, board), Link(board, thread), Link(thread, user, records="posts"),
           Link(thread, reactions, records="posts")])
forum_recrawl = forum.recrawling(
    "forum_recrawl", boards=RecrawlPolicy(volatile=True), thread=RecrawlPolicy(volatile=True),
    board=RecrawlPolicy(ttl_s=86400, first_page_volatile=True, last_page_volatile=True),
    user=RecrawlPolicy(ttl_s=86400), reactions=RecrawlPolicy(ttl_s=86400, last_page_volatile=True))
