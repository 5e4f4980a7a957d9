"""scrapy-playwright on the JavaScript shop (``sandbox.js``), for ``bench/browser.py``: the
same pages and actions as ``sites/jsshop``, images, fonts and media aborted by resource
type (``PLAYWRIGHT_ABORT_REQUEST``), the system Chromium, ``CONCURRENCY`` pages at once.
Prints one JSON line: the products found, the pages handled.

    python js_spider.py BASE_URL OUT.json CHROMIUM CONCURRENCY
"""

from __future__ import annotations

import json
import sys
from typing import Any

import scrapy
from scrapy.crawler import CrawlerProcess
from scrapy_playwright.page import PageMethod

BLOCKED = {"image", "font", "media"}
SCROLL_TO_END = """async () => {
  // as sites/jsshop's Browse(scroll=100, scroll_until="#end"): up to 100 scrolls, each
  // waiting up to 1.5 s for the list to grow
  for (let i = 0; i < 100 && !document.querySelector('#end'); i++) {
    const h = document.body.scrollHeight;
    window.scrollTo(0, h);
    for (let t = 0; t < 30 && document.body.scrollHeight <= h
         && !document.querySelector('#end'); t++) {
      await new Promise(r => setTimeout(r, 50));
    }
  }
}"""
ACTIONS = {
    "app": [PageMethod("wait_for_selector", "li.row", state="attached")],
    "scroll": [PageMethod("wait_for_selector", "li.row", state="attached"),
               PageMethod("evaluate", SCROLL_TO_END)],
    "reveal": [PageMethod("click", "#show"),
               PageMethod("wait_for_selector", "li.row", state="attached")],
}


def abort(request: Any) -> bool:
    return bool(request.resource_type in BLOCKED)


class JsShopSpider(scrapy.Spider):
    name = "jsshop"
    pages = 0

    def __init__(self, base: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.base = base
        self.products: list[dict[str, Any]] = []

    async def start(self) -> Any:
        yield scrapy.Request(self.base + "/", meta={"playwright": True, "playwright_page_methods": [
            PageMethod("wait_for_selector", "a.section", state="attached")]})

    def parse(self, response: Any) -> Any:
        JsShopSpider.pages += 1
        for href in response.css("a.section::attr(href)").getall():
            kind = href.rsplit("/", 1)[1]
            yield response.follow(href, self.parse_list, meta={
                "playwright": True, "playwright_page_methods": ACTIONS[kind]})

    def parse_list(self, response: Any) -> Any:
        JsShopSpider.pages += 1
        for href in response.css("li.row a.product::attr(href)").getall():
            yield response.follow(href, self.parse_product, meta={"playwright": True})

    def parse_product(self, response: Any) -> Any:
        JsShopSpider.pages += 1
        article = response.css("article.product")
        item = {"id": int(article.attrib["data-id"]), "name": article.css("h1.name::text").get(),
                "price": float(article.css(".price::text").get()),
                "section": article.css(".section::text").get()}
        self.products.append(item)
        yield item


def main(base: str, out: str, chromium: str, concurrency: int) -> None:
    process = CrawlerProcess(settings={
        "DOWNLOAD_HANDLERS": {"http": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler",
                              "https": "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"},
        "TWISTED_REACTOR": "twisted.internet.asyncioreactor.AsyncioSelectorReactor",
        "PLAYWRIGHT_LAUNCH_OPTIONS": {"executable_path": chromium,
                                      "args": ["--no-sandbox", "--disable-dev-shm-usage"]},
        "PLAYWRIGHT_ABORT_REQUEST": abort,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": concurrency,
        "CONCURRENT_REQUESTS": concurrency, "CONCURRENT_REQUESTS_PER_DOMAIN": concurrency,
        "ROBOTSTXT_OBEY": False, "LOG_LEVEL": "WARNING", "TELNETCONSOLE_ENABLED": False,
    })
    crawler = process.create_crawler(JsShopSpider)
    process.crawl(crawler, base=base)
    process.start()
    spider = crawler.spider
    with open(out, "w") as file:
        json.dump(spider.products, file)
    print(json.dumps({"products": len(spider.products), "pages": JsShopSpider.pages}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
