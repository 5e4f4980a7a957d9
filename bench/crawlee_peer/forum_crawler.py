# mypy: disallow-untyped-decorators=False
# (Crawlee lives in the peer's own venv: to mypy here its router is Any)
"""The Crawlee for Python peer of the deep-chain benchmark: the sandbox forum, the same
records as ``sandbox/forum/expected.py`` describes.

    python forum_crawler.py BASE_URL OUT.jsonl [--concurrency 16]

Runs in its own venv (``requirements.txt`` here, pinned). A ``ParselCrawler`` at a fixed
concurrency (min = max = desired = 16), memory storage (``MemoryStorageClient``), one
router handler per step: boards index -> board pages -> thread pages -> author profiles
and reactions. The request queue deduplicates follow-ups by their unique key. Records
are pushed to the default dataset as ``{"type": collection, ...fields}`` and written
to a JSONL file at the end (Crawlee exports only JSON and CSV itself). 404/410 are
client errors Crawlee does not retry; they land in the failed-request handler.

Prints one line ``BENCH {json}`` at the end, as the Scrapy peer does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import resource
import sys
import time
from datetime import UTC, date, datetime, timedelta
from datetime import time as clock
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

from crawlee import ConcurrencySettings, Request  # type: ignore[import-not-found]
from crawlee.crawlers import (  # type: ignore[import-not-found]
    BasicCrawlingContext,
    ParselCrawler,
    ParselCrawlingContext,
)
from crawlee.storage_clients import MemoryStorageClient  # type: ignore[import-not-found]

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


def build(origin: str, concurrency: int, failures: dict[str, int]) -> Any:
    """The crawler and its handlers; every link the forum writes is root-relative."""
    crawler = ParselCrawler(
        concurrency_settings=ConcurrencySettings(
            min_concurrency=concurrency, max_concurrency=concurrency,
            desired_concurrency=concurrency),
        storage_client=MemoryStorageClient(),
        max_request_retries=2,
        retry_on_blocked=False,
        statistics_log_format="inline",
    )
    router = crawler.router

    async def follow(context: Any, hrefs: list[str], label: str) -> None:
        if hrefs:
            await context.add_requests([Request.from_url(origin + h, label=label)
                                        for h in hrefs])

    @router.default_handler
    async def index(context: ParselCrawlingContext) -> None:
        sel = context.selector
        for li in sel.css("li.board"):
            await context.push_data({
                "type": "boards", "board_id": li.attrib["data-board-id"],
                "name": li.css("a.board-link::text").get(),
                "description": li.css(".description::text").get(),
                "thread_count": int(li.css(".thread-count::text").get())})
        await follow(context, sel.css("a.board-link::attr(href)").getall(), "board")

    @router.handler("board")
    async def board(context: ParselCrawlingContext) -> None:
        sel = context.selector
        await follow(context, sel.css("tr.thread .title a::attr(href)").getall(), "thread")
        await follow(context, sel.css('a[rel="next"]::attr(href)').getall(), "board")

    @router.handler("thread")
    async def thread(context: ParselCrawlingContext) -> None:
        sel = context.selector
        now = parsedate_to_datetime(context.http_response.headers.get("date"))
        tid = int(sel.css("article.thread::attr(data-thread-id)").get())
        opener = sel.css(".thread-meta a.author::attr(data-user-id)").get()
        records = []
        if opener is not None:  # the first page
            records.append({
                "type": "threads", "thread_id": tid,
                "title": sel.css("h1.thread-title::text").get(), "author_id": int(opener),
                "boards": sorted(sel.css("nav a.board::attr(data-board-id)").getall()),
                "reply_count": int(sel.css(".reply-count::text").get())})
        users, reactions = [], []
        for post in sel.css("div.post"):
            author = post.css("a.author")
            records.append({
                "type": "posts", "post_id": int(post.attrib["data-post-id"]), "thread_id": tid,
                "author_id": int(author.attrib["data-user-id"]),
                "body": post.css(".body p::text").get(),
                "created_at": posted_at(post.css(".time::text").get(), now),
                "score": score(post.css(".score::text").get())})
            users.append(author.attrib["href"])
            reactions.append(post.css("a.reactions::attr(href)").get())
        await context.push_data(records)
        await follow(context, users, "user")
        await follow(context, reactions, "reactions")
        await follow(context, sel.css('a[rel="next"]::attr(href)').getall(), "thread")

    @router.handler("user")
    async def user(context: ParselCrawlingContext) -> None:
        u = json.loads(await context.http_response.read())
        await context.push_data({"type": "users", "user_id": u["id"], "name": u["name"],
                                 "joined": u["joined"], "reputation": u["reputation"]})

    @router.handler("reactions")
    async def reactions_page(context: ParselCrawlingContext) -> None:
        page = json.loads(await context.http_response.read())
        pid = page["post_id"]
        await context.push_data([
            {"type": "reactions", "reaction_id": r["id"], "post_id": pid,
             "user_id": r["user_id"], "kind": r["kind"], "created_at": r["created_at"]}
            for r in page["reactions"]])
        if page["next_cursor"]:
            await follow(context, [f"/forum/api/posts/{pid}/reactions?cursor="
                                   f"{page['next_cursor']}"], "reactions")

    @crawler.failed_request_handler
    async def failed(context: BasicCrawlingContext, error: Exception) -> None:
        failures[context.request.url] = getattr(error, "status_code", 0) or 0

    return crawler


async def run(base_url: str, out: Path, concurrency: int) -> dict[str, Any]:
    failures: dict[str, int] = {}
    origin = base_url.rstrip("/")
    crawler = build(origin, concurrency, failures)
    started, cpu_start = time.perf_counter(), cpu_s()
    stats = await crawler.run([origin + "/forum/"])
    crawl_s = time.perf_counter() - started
    dataset = await crawler.get_dataset()
    items = 0
    with out.open("w", encoding="utf-8") as f:
        async for item in dataset.iterate_items():
            f.write(json.dumps(item) + "\n")
            items += 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"pages": stats.requests_finished + stats.requests_failed, "items": items,
            "failures": len(failures), "errors": stats.requests_failed - len(
                [s for s in failures.values() if s in (404, 410)]),
            "crawl_s": round(crawl_s, 3), "cpu_start_s": round(cpu_start, 3),
            "cpu_end_s": round(cpu_s(), 3), "maxrss_mb": round(usage.ru_maxrss / 1024, 1)}


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base_url")
    p.add_argument("out", type=Path)
    p.add_argument("--concurrency", type=int, default=16)
    args = p.parse_args(argv)
    report = asyncio.run(run(args.base_url, args.out, args.concurrency))
    print("BENCH " + json.dumps(report), flush=True)
    return 1 if report["errors"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
