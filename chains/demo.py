"""Chains of the demo site: feed -> user_info, and feed -> user_statuses -> detail -> comment.

Recrawl policies: the feed and the first page of every list change under the same
URL, so they are always fetched; profiles and articles are fetched again after a
day, later pages of lists after an hour. A relaunch therefore fetches what may
have changed and skips the rest (``skipped`` and ``unchanged`` in the summary).
"""

from __future__ import annotations

from chains.model import Chain, Link, Step
from external_interface.dedup import RecrawlPolicy

HOUR, DAY = 3600, 86_400

demo = Chain(
    name="demo",
    start="feed",
    steps={
        "feed": Step(task="demo.h5.feed", priority=3, recrawl=RecrawlPolicy(volatile=True)),
        "user_info": Step(task="demo.h5.user_info", batch_size=5,
                          recrawl=RecrawlPolicy(ttl_s=DAY)),
        "user_statuses": Step(task="demo.h5.user_statuses", batch_size=5,
                              recrawl=RecrawlPolicy(ttl_s=HOUR, first_page_volatile=True)),
        "detail": Step(task="demo.app.detail", batch_size=10, recrawl=RecrawlPolicy(ttl_s=DAY)),
        "comment": Step(task="demo.common.comment", batch_size=10, priority=7,
                        recrawl=RecrawlPolicy(ttl_s=HOUR, first_page_volatile=True)),
    },
    links=[
        Link(src="feed", records="feed_entries", dst="user_info", map={"user_id": "author_id"}),
        Link(src="feed", records="feed_entries", dst="user_statuses",
             map={"user_id": "author_id"}),
        Link(src="user_statuses", records="statuses", dst="detail",
             map={"article_id": "article_id"}),
        Link(src="detail", records="articles", dst="comment", map={"article_id": "id"}),
    ],
)
