"""The Scrapy peer of ``bench generic``: a CrawlSpider with a LinkExtractor, as a user writes it.

    scrapy runspider generic_spider.py -a start=http://127.0.0.1:PORT/ \
        -s DEPTH_LIMIT=3 -s ROBOTSTXT_OBEY=True -O pages.jsonl

One rule: every link the ``LinkExtractor`` finds on the start URL's host is
followed (``allowed_domains`` the same host, ``DEPTH_LIMIT`` the depth,
robots.txt obeyed) and each page becomes one item (url as linked, final url,
status, title, meta description, canonical). The URLs the sitemaps list are
fetched too, from robots.txt's ``Sitemap:`` lines, index and gzip children
followed, as a SitemapSpider would: the crawlchain generic crawl reads them, so
the three crawlers fetch the same page set. Items carry no outgoing-link list:
the spider's cost is what the crawl itself needs (crawlchain stores the list, so
the comparison is conservative). Runs in its own venv (``requirements.txt``).

Prints one line ``BENCH {json}`` when closed: pages, items, ``crawl_s`` from the
first start request to the close, and the process's CPU seconds at the start
and at the close (``getrusage``), so start-up can be told apart from crawling.
"""

from __future__ import annotations

import json
import resource
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import scrapy  # type: ignore[import-not-found]
from scrapy.linkextractors import LinkExtractor  # type: ignore[import-not-found]
from scrapy.spiders import CrawlSpider, Rule  # type: ignore[import-not-found]
from scrapy.utils.gz import gunzip  # type: ignore[import-not-found]
from scrapy.utils.sitemap import Sitemap, sitemap_urls_from_robots  # type: ignore[import-not-found]


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


class GenericSpider(CrawlSpider):  # type: ignore[misc,unused-ignore]
    name = "generic"

    def __init__(self, start: str, sitemaps: str = "1", **kwargs: Any) -> None:
        parts = urlsplit(start)
        self.start_urls = [start]
        self.allowed_domains = [parts.hostname or ""]  # the offsite middleware: no port here
        self.read_sitemaps = sitemaps not in ("0", "false", "no")
        # The extractor compares the netloc, port included: off-site links are dropped at
        # extraction, before a request is built for each.
        self.rules = (Rule(LinkExtractor(allow_domains=[parts.netloc]), callback="parse_page",
                           follow=True),)
        super().__init__(**kwargs)  # compiles the rules
        self.pages = 0
        self.started = 0.0
        self.cpu_start = 0.0

    async def start(self) -> AsyncIterator[Any]:
        self.started, self.cpu_start = time.perf_counter(), cpu_s()
        # Not the default start (dont_filter=True): every page links back to the start URL,
        # and an unfiltered start request would be fetched again at the first such link.
        yield scrapy.Request(self.start_urls[0])
        if self.read_sitemaps:
            yield scrapy.Request(urljoin(self.start_urls[0], "/robots.txt"),
                                 callback=self.parse_robots)

    def parse_robots(self, response: Any) -> Iterator[Any]:
        for url in sitemap_urls_from_robots(response.body, base_url=response.url):
            yield scrapy.Request(url, callback=self.parse_sitemap)

    def parse_sitemap(self, response: Any) -> Iterator[Any]:
        body = response.body
        if body[:2] == b"\x1f\x8b":
            body = gunzip(body)
        sitemap = Sitemap(body)
        for entry in sitemap:
            if sitemap.type == "sitemapindex":
                yield scrapy.Request(entry["loc"], callback=self.parse_sitemap)
            else:
                yield scrapy.Request(entry["loc"])  # no callback: CrawlSpider's, rules apply

    def parse_start_url(self, response: Any, **kwargs: Any) -> Iterator[dict[str, Any]]:
        """The start URL and the sitemap's pages are pages too."""
        return self.parse_page(response)

    def parse_page(self, response: Any) -> Iterator[dict[str, Any]]:
        self.pages += 1
        yield {
            "url": (response.meta.get("redirect_urls") or [response.url])[0],
            "final_url": response.url,
            "status": response.status,
            "title": response.css("title::text").get(),
            "description": response.css('meta[name="description"]::attr(content)').get(),
            "canonical": response.css('link[rel="canonical"]::attr(href)').get(),
            "depth": response.meta.get("depth", 0),
        }

    def closed(self, reason: str) -> None:
        stats = self.crawler.stats
        usage = resource.getrusage(resource.RUSAGE_SELF)
        print("BENCH " + json.dumps({
            "pages": self.pages,
            "items": stats.get_value("item_scraped_count", 0),
            "requests": stats.get_value("downloader/request_count", 0),
            "errors": stats.get_value("log_count/ERROR", 0),
            "crawl_s": round(time.perf_counter() - self.started, 3),
            "cpu_start_s": round(self.cpu_start, 3),
            "cpu_end_s": round(usage.ru_utime + usage.ru_stime, 3),
            "maxrss_mb": round(usage.ru_maxrss / 1024, 1),
            "reason": reason,
        }), flush=True)
