"""Chains of the demo site: feed -> user_info, and feed -> user_statuses -> detail -> comment.

Recrawl policies: the feed and the first page of every list change under the same
URL, so they are always fetched; profiles and articles are fetched again after a
day, later pages of lists after an hour. A relaunch therefore fetches what may
have changed and skips the rest (``skipped`` and ``unchanged`` in the summary).
Lists (the feed, a user's statuses, an article's comments) run on in their message
for up to ``LIST_RUN`` next pages (``Step.inline_next``).
"""

from __future__ import annotations

from chains.runtime.model import Chain, Link, Step
from chains.runtime.schedule import Schedule
from external_interface.dedup import RecrawlPolicy

HOUR, DAY = 3600, 86_400
LIST_RUN = 20  # next pages a message runs itself before handing a list back to the queue

demo = Chain(
    name="demo",
    start="feed",
    steps={
        "feed": Step(task="demo.h5.feed", priority=3, recrawl=RecrawlPolicy(volatile=True),
                     inline_next=LIST_RUN),
        "user_info": Step(task="demo.h5.user_info", batch_size=5,
                          recrawl=RecrawlPolicy(ttl_s=DAY)),
        "user_statuses": Step(task="demo.h5.user_statuses", batch_size=5,
                              recrawl=RecrawlPolicy(ttl_s=HOUR, first_page_volatile=True),
                              inline_next=LIST_RUN),
        "detail": Step(task="demo.app.detail", batch_size=10, recrawl=RecrawlPolicy(ttl_s=DAY)),
        "comment": Step(task="demo.common.comment", batch_size=10, priority=7,
                        recrawl=RecrawlPolicy(ttl_s=HOUR, first_page_volatile=True),
                        inline_next=LIST_RUN),
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

# Refill chains: launched by the tasks when the site's session or device pool runs low
# (``sites.demo.PROVIDERS.refills``), and by beat every few minutes if it is low then.
demo_login = Chain(
    name="demo-login",
    start="captcha",
    steps={"captcha": Step(task="demo.h5.captcha", priority=8),
           "login": Step(task="demo.h5.login", priority=9)},
    links=[Link(src="captcha", records="challenges", dst="login",
                map={"account": "account", "captcha_id": "captcha_id", "image": "image"})],
)

demo_device = Chain(
    name="demo-device",
    start="register",
    steps={"register": Step(task="demo.app.register_device", priority=9)},
)

SCHEDULES = [
    Schedule(chain="demo-login", every_s=300, when_low="cookie:demo"),
    Schedule(chain="demo-device", every_s=300, when_low="device:demo"),
]
