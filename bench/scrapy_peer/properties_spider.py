"""The Scrapy peer of ``bench/crawl.py``: the properties site, the same fields as ours.

    scrapy runspider properties_spider.py -a base=http://127.0.0.1:28080 \
        -s CONCURRENT_REQUESTS=16 -s CONCURRENT_REQUESTS_PER_DOMAIN=16 \
        -s CONCURRENT_ITEMS=1 -O items.jsonl
    ... -a mode=index -a shards=20 -a n_index=1667      (the latency-bound test)

Runs in its own venv (``requirements.txt`` here; Scrapy is not a dependency of
crawlchain). Starts at index_00000 (or at ``shards`` evenly spaced index pages,
as the book's ``distr`` spider, Scrapy's dupefilter ending each shard where the
next began), follows ``next`` and, in mode ``full``, every detail link. The
fields and XPaths are those of ``sites/properties/web/detail.py``.

Prints one line ``BENCH {json}`` when closed: pages, items, ``crawl_s`` from the
first start request to the last parsed response, and the process's CPU seconds
at the start and at the end of the crawl (``getrusage``), so start-up and
shutdown can be told apart from crawling.
"""

from __future__ import annotations

import json
import re
import resource
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import scrapy  # type: ignore[import-not-found]

NUMBER = re.compile(r"[,.0-9]+")


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class PropertiesSpider(scrapy.Spider):
    name = "properties"

    def __init__(self, base: str, mode: str = "full", shards: str = "1", n_index: str = "0",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = base.rstrip("/") + "/"
        self.mode = mode
        self.shards = int(shards)
        self.n_index = int(n_index)
        self.pages = 0
        self.started = self.last = 0.0
        self.cpu_start = 0.0

    def start_urls_list(self) -> list[str]:
        if self.shards <= 1:
            return [self.base + "index_00000.html"]
        starts = sorted({self.n_index * x // self.shards for x in range(self.shards)})
        return [self.base + f"index_{page:05d}.html" for page in starts]

    async def start(self) -> AsyncIterator[Any]:
        self.started, self.cpu_start = time.perf_counter(), cpu_s()
        for url in self.start_urls_list():
            yield scrapy.Request(url, callback=self.parse_index)

    def parse_index(self, response: Any) -> Iterator[Any]:
        self.pages += 1
        self.last = time.perf_counter()
        for href in response.xpath('//*[contains(@class, "next")]//a/@href').getall():
            yield response.follow(href, callback=self.parse_index)
        if self.mode == "full":
            for href in response.xpath('//*[@itemprop="url"]/@href').getall():
                yield response.follow(href, callback=self.parse_detail)

    def parse_detail(self, response: Any) -> Iterator[dict[str, Any]]:
        self.pages += 1
        self.last = time.perf_counter()
        price = response.xpath('//*[@itemprop="price"][1]/text()').re_first(NUMBER)
        image = response.xpath('//*[@itemprop="image"][1]/@src').get()
        yield {
            "url": response.url,
            "title": response.xpath('//*[@itemprop="name"][1]/text()').get("").strip().title(),
            "price": float(price.replace(",", "")) if price else None,
            "description": " ".join(
                s.strip() for s in response.xpath('//*[@itemprop="description"][1]/text()')
                .getall()),
            "address": response.xpath('//*[@itemtype="http://schema.org/Place"][1]/text()')
            .get("").strip(),
            "image": response.urljoin(image) if image else "",
        }

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats
        usage = resource.getrusage(resource.RUSAGE_SELF)
        record = {
            "pages": self.pages,
            "items": stats.get_value("item_scraped_count", 0),
            "errors": stats.get_value("log_count/ERROR", 0),
            "crawl_s": round(self.last - self.started, 3) if self.last else None,
            "cpu_start_s": round(self.cpu_start, 3),
            "cpu_end_s": round(usage.ru_utime + usage.ru_stime, 3),
            "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
            "reason": reason,
        }
        print("BENCH " + json.dumps(record), flush=True)
