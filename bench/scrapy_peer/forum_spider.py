# mypy: disallow-subclassing-any=False
# (Scrapy lives in the peer's own venv: to mypy here it is Any)
"""The Scrapy peer of the deep-chain benchmark: the sandbox forum, the same records as
``sandbox/forum/expected.py`` describes.

    scrapy runspider forum_spider.py -a base=http://127.0.0.1:28090 -O items.jsonl

Runs in its own venv (``requirements.txt`` here). The chain: boards index -> board pages
(``rel=next``) -> thread pages (``?after=`` cursors) -> author profiles (JSON) and
reactions (JSON, ``next_cursor``). Follow-ups are deduplicated by Scrapy's dupefilter
(an author met on a hundred posts is fetched once). Items are dicts
``{"type": collection, ...fields}``; times are read against the response's ``Date``.

Tuned as ``bench/crawl_scrapy.py`` tunes the properties spider (``custom_settings``
below; ``-s`` overrides): 16 concurrent requests, all to the one host,
``CONCURRENT_ITEMS=1``, AutoThrottle, cookies and telnet off. 404/410 are dropped by
``HttpErrorMiddleware`` and counted. Prints one line ``BENCH {json}`` when closed.
"""

from __future__ import annotations

import json
import re
import resource
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from email.utils import parsedate_to_datetime
from typing import Any

import scrapy  # type: ignore[import-not-found]

AGO = re.compile(r"(\d+) (minute|hour|day)s? ago")
AT = re.compile(r"(today|yesterday|on (\d{4}-\d\d-\d\d)) at (\d\d):(\d\d)")
UNIT = {"minute": 60, "hour": 3600, "day": 86400}


def posted_at(text: str, now: datetime) -> str:
    """A relative time as UTC ISO-8601, against the server's clock ``now``."""
    if text == "just now":
        moment = now
    elif m := AGO.fullmatch(text):
        moment = now - timedelta(seconds=int(m[1]) * UNIT[m[2]])
    elif m := AT.fullmatch(text):
        day = (date.fromisoformat(m[2]) if m[2] else
               now.date() - timedelta(days=1 if m[1] == "yesterday" else 0))
        moment = datetime.combine(day, clock(int(m[3]), int(m[4])), UTC)
    else:
        raise ValueError(f"unknown time {text!r}")
    return f"{moment:%Y-%m-%dT%H:%M:%SZ}"


def score(text: str) -> int:
    """ "1.2k" -> 1200."""
    if text.endswith("k"):
        whole, _, tenth = text[:-1].partition(".")
        return int(whole) * 1000 + int(tenth or 0) * 100
    return int(text)


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class ForumSpider(scrapy.Spider):
    name = "forum"
    custom_settings = {
        "CONCURRENT_REQUESTS": 16,
        "CONCURRENT_REQUESTS_PER_DOMAIN": 16,
        "CONCURRENT_ITEMS": 1,
        "AUTOTHROTTLE_ENABLED": False,
        "COOKIES_ENABLED": False,
        "TELNETCONSOLE_ENABLED": False,
        "ROBOTSTXT_OBEY": False,
        "LOG_LEVEL": "INFO",
    }

    def __init__(self, base: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = base.rstrip("/")
        self.started = self.last = 0.0
        self.cpu_start = 0.0

    async def start(self) -> AsyncIterator[Any]:
        self.started, self.cpu_start = time.perf_counter(), cpu_s()
        yield scrapy.Request(self.base + "/forum/", callback=self.parse_index)

    def seen(self) -> None:
        self.last = time.perf_counter()  # the end of the crawl, for crawl_s

    def parse_index(self, response: Any) -> Iterator[Any]:
        self.seen()
        for li in response.css("li.board"):
            yield {"type": "boards", "board_id": li.attrib["data-board-id"],
                   "name": li.css("a.board-link::text").get(),
                   "description": li.css(".description::text").get(),
                   "thread_count": int(li.css(".thread-count::text").get())}
            yield response.follow(li.css("a.board-link::attr(href)").get(),
                                  callback=self.parse_board)

    def parse_board(self, response: Any) -> Iterator[Any]:
        self.seen()
        for href in response.css("tr.thread .title a::attr(href)").getall():
            yield response.follow(href, callback=self.parse_thread)
        for href in response.css('a[rel="next"]::attr(href)').getall():
            yield response.follow(href, callback=self.parse_board)

    def parse_thread(self, response: Any) -> Iterator[Any]:
        self.seen()
        now = parsedate_to_datetime(response.headers.get("Date").decode())
        tid = int(response.css("article.thread::attr(data-thread-id)").get())
        opener = response.css(".thread-meta a.author::attr(data-user-id)").get()
        if opener is not None:  # the first page
            yield {"type": "threads", "thread_id": tid,
                   "title": response.css("h1.thread-title::text").get(),
                   "author_id": int(opener),
                   "boards": sorted(response.css("nav a.board::attr(data-board-id)").getall()),
                   "reply_count": int(response.css(".reply-count::text").get())}
        for post in response.css("div.post"):
            author = post.css("a.author")
            yield {"type": "posts", "post_id": int(post.attrib["data-post-id"]),
                   "thread_id": tid, "author_id": int(author.attrib["data-user-id"]),
                   "body": post.css(".body p::text").get(),
                   "created_at": posted_at(post.css(".time::text").get(), now),
                   "score": score(post.css(".score::text").get())}
            yield response.follow(author.attrib["href"], callback=self.parse_user)
            yield response.follow(post.css("a.reactions::attr(href)").get(),
                                  callback=self.parse_reactions)
        for href in response.css('a[rel="next"]::attr(href)').getall():
            yield response.follow(href, callback=self.parse_thread)

    def parse_user(self, response: Any) -> Iterator[Any]:
        self.seen()
        u = response.json()
        yield {"type": "users", "user_id": u["id"], "name": u["name"], "joined": u["joined"],
               "reputation": u["reputation"]}

    def parse_reactions(self, response: Any) -> Iterator[Any]:
        self.seen()
        page = response.json()
        for r in page["reactions"]:
            yield {"type": "reactions", "reaction_id": r["id"], "post_id": page["post_id"],
                   "user_id": r["user_id"], "kind": r["kind"], "created_at": r["created_at"]}
        if page["next_cursor"]:
            yield response.follow(f"?cursor={page['next_cursor']}",
                                  callback=self.parse_reactions)

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print("BENCH " + json.dumps({
            "pages": stats.get_value("downloader/response_count", 0),
            "items": stats.get_value("item_scraped_count", 0),
            "failures": stats.get_value("httperror/response_ignored_count", 0),
            "errors": stats.get_value("log_count/ERROR", 0),
            "crawl_s": round(self.last - self.started, 3) if self.last else None,
            "cpu_start_s": round(self.cpu_start, 3),
            "cpu_end_s": round(usage.ru_utime + usage.ru_stime, 3),
            "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
            "reason": reason,
        }), flush=True)
