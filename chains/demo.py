"""Chains of the demo site: feed -> user_info, and feed -> user_statuses -> detail -> comment.

Recrawl policies: the feed and the first page of every list change under the same
URL, so they are always fetched; profiles and articles are fetched again after a
day, later pages of lists after an hour. A relaunch therefore fetches what may
have changed and skips the rest (``skipped`` and ``unchanged`` in the summary).
Lists (the feed, a user's statuses, an article's comments) run on in their message
for up to ``LIST_RUN`` next pages (``Step.inline_next``).
"""

from __future__ import annotations

from chains.api import Chain, Link, RecrawlPolicy, Schedule, Step
from sites.demo.app import detail
from sites.demo.common import comment
from sites.demo.h5 import feed, user_info, user_statuses
from sites.demo.pools import captcha, login, register_device

HOUR, DAY = 3600, 86_400
LIST_RUN = 20  # next pages a message runs itself before handing a list back to the queue

demo = Chain(
    "demo", start=feed,
    steps=[
        Step(feed, priority=3, recrawl=RecrawlPolicy(volatile=True), inline_next=LIST_RUN),
        Step(user_info, batch_size=5, recrawl=RecrawlPolicy(ttl_s=DAY)),
        Step(user_statuses, batch_size=5, inline_next=LIST_RUN,
             recrawl=RecrawlPolicy(ttl_s=HOUR, first_page_volatile=True)),
        Step(detail, batch_size=10, recrawl=RecrawlPolicy(ttl_s=DAY)),
        Step(comment, batch_size=10, priority=7, inline_next=LIST_RUN,
             recrawl=RecrawlPolicy(ttl_s=HOUR, first_page_volatile=True)),
    ],
    links=[
        Link(feed, user_info, map={"user_id": "author_id"}),
        Link(feed, user_statuses, map={"user_id": "author_id"}),
        Link(user_statuses, detail),
        Link(detail, comment, map={"article_id": "id"}),
    ],
)

# Refill chains: launched by the tasks when the site's session or device pool runs low
# (``sites.demo.site.PROVIDERS.refills``), and by beat every few minutes if it is low then.
demo_login = Chain("demo-login", start=captcha,
                   steps=[Step(captcha, priority=8), Step(login, priority=9)],
                   links=[Link(captcha, login)])

demo_device = Chain("demo-device", start="register",
                    steps={"register": Step(register_device, priority=9)})

SCHEDULES = [
    Schedule(chain="demo-login", every_s=300, when_low="cookie:demo"),
    Schedule(chain="demo-device", every_s=300, when_low="device:demo"),
]
