"""The Crawlee for Python peer of ``bench generic``: a ParselCrawler with ``enqueue_links``.

    python generic_crawler.py --start http://127.0.0.1:PORT/ --depth 3 --out pages.jsonl

One default handler: each page becomes one record (url as requested, final url,
status, title, meta description, canonical) and ``enqueue_links`` follows its
links with the ``same-hostname`` strategy; ``max_crawl_depth`` bounds the depth,
``respect_robots_txt_file`` obeys robots.txt. The URLs the sitemaps list (from
robots.txt's ``Sitemap:`` lines, index and gzip children followed by Crawlee's
own sitemap reader) are start requests too: the crawlchain generic crawl reads
them, so the three crawlers fetch the same page set. Storage is Crawlee's memory
client; the dataset is written to ``--out`` as JSONL at the end. Runs in its own
venv (``requirements.txt`` here).

Prints one line ``BENCH {json}`` at the end: pages, ``crawl_s`` from the first
request (robots.txt) to the end of the run, and the process's CPU seconds at
both marks (``getrusage``), so start-up can be told apart from crawling.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import time
from pathlib import Path
from typing import Any

from crawlee import ConcurrencySettings  # type: ignore[import-not-found]
from crawlee._utils.robots import RobotsTxtFile  # type: ignore[import-not-found]
from crawlee.crawlers import (  # type: ignore[import-not-found]
    ParselCrawler,
    ParselCrawlingContext,
)
from crawlee.http_clients import ImpitHttpClient  # type: ignore[import-not-found]
from crawlee.storage_clients import MemoryStorageClient  # type: ignore[import-not-found]


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def sitemap_urls(start: str, http_client: Any) -> list[str]:
    """The pages robots.txt's sitemaps list, on the start URL's host."""
    robots = await RobotsTxtFile.find(start, http_client)
    return list(await robots.parse_urls_from_sitemaps(enqueue_strategy="same-hostname"))


async def crawl(start: str, depth: int, out: Path, sitemaps: bool,
                concurrency: int) -> dict[str, Any]:
    started, cpu_start = time.perf_counter(), cpu_s()
    http_client = ImpitHttpClient()
    starts = [start, *(await sitemap_urls(start, http_client) if sitemaps else [])]
    crawler = ParselCrawler(
        http_client=http_client,
        storage_client=MemoryStorageClient(),
        max_crawl_depth=depth,
        respect_robots_txt_file=True,
        concurrency_settings=ConcurrencySettings(min_concurrency=concurrency,
                                                 desired_concurrency=concurrency,
                                                 max_concurrency=concurrency),
    )

    @crawler.router.default_handler  # type: ignore[untyped-decorator,unused-ignore]
    async def page(context: ParselCrawlingContext) -> None:
        selector = context.selector
        await context.push_data({
            "url": context.request.url,
            "final_url": context.request.loaded_url or context.request.url,
            "status": context.http_response.status_code,
            "title": selector.css("title::text").get(),
            "description": selector.css('meta[name="description"]::attr(content)').get(),
            "canonical": selector.css('link[rel="canonical"]::attr(href)').get(),
            "depth": context.request.crawl_depth,
        })
        await context.enqueue_links(strategy="same-hostname")

    stats = await crawler.run(list(dict.fromkeys(starts)))
    items = (await crawler.get_data()).items
    with out.open("w") as f:
        for item in items:
            f.write(json.dumps(item) + "\n")
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return {"pages": len(items), "items": len(items),
            "requests": stats.requests_finished + stats.requests_failed,
            "errors": stats.requests_failed,
            "crawl_s": round(time.perf_counter() - started, 3),
            "cpu_start_s": round(cpu_start, 3),
            "cpu_end_s": round(usage.ru_utime + usage.ru_stime, 3),
            "maxrss_mb": round(usage.ru_maxrss / 1024, 1), "reason": "finished"}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--start", required=True)
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--no-sitemaps", action="store_true")
    p.add_argument("--concurrency", type=int, default=16)
    args = p.parse_args()
    report = asyncio.run(crawl(args.start, args.depth, args.out, not args.no_sitemaps,
                               args.concurrency))
    print("BENCH " + json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
