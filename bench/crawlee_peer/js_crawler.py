"""Crawlee for Python's PlaywrightCrawler on the JavaScript shop (``sandbox.js``), for
``bench/browser.py``: the same pages and the same actions as ``sites/jsshop`` (wait for
the rows, click to reveal, scroll to the end), images, fonts and media blocked by
resource type, the system Chromium, ``--concurrency`` pages at once. Prints one JSON
line: the products found, the pages handled.

    python js_crawler.py BASE_URL OUT.json CHROMIUM CONCURRENCY
"""

from __future__ import annotations

import asyncio
import json
import sys

from crawlee import ConcurrencySettings, Request
from crawlee.crawlers import (
    PlaywrightCrawler,
    PlaywrightCrawlingContext,
    PlaywrightPreNavCrawlingContext,
)

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


async def main(base: str, out: str, chromium: str, concurrency: int) -> None:
    products: list[dict[str, object]] = []
    pages = 0
    crawler = PlaywrightCrawler(
        headless=True, browser_type="chromium",
        browser_launch_options={"executable_path": chromium,
                                "args": ["--no-sandbox", "--disable-dev-shm-usage"]},
        concurrency_settings=ConcurrencySettings(min_concurrency=concurrency,
                                                 desired_concurrency=concurrency,
                                                 max_concurrency=concurrency),
        max_request_retries=3, configure_logging=False)

    @crawler.pre_navigation_hook
    async def block(context: PlaywrightPreNavCrawlingContext) -> None:
        await context.page.route("**/*", lambda route: route.abort()
                                 if route.request.resource_type in BLOCKED
                                 else route.continue_())

    @crawler.router.default_handler
    async def home(context: PlaywrightCrawlingContext) -> None:
        nonlocal pages
        pages += 1
        await context.page.wait_for_selector("a.section", state="attached")
        for href in await context.page.eval_on_selector_all(
                "a.section", "els => els.map(e => e.href)"):
            await context.add_requests([Request.from_url(href, label=href.rsplit("/", 1)[1])])

    async def rows(context: PlaywrightCrawlingContext) -> None:
        nonlocal pages
        pages += 1
        await context.page.wait_for_selector("li.row", state="attached")
        links = await context.page.eval_on_selector_all(
            "li.row a.product", "els => els.map(e => e.href)")
        await context.add_requests([Request.from_url(h, label="product") for h in links])

    @crawler.router.handler("app")
    async def app(context: PlaywrightCrawlingContext) -> None:
        await rows(context)

    @crawler.router.handler("scroll")
    async def scroll(context: PlaywrightCrawlingContext) -> None:
        await context.page.wait_for_selector("li.row", state="attached")
        await context.page.evaluate(SCROLL_TO_END)
        await rows(context)

    @crawler.router.handler("reveal")
    async def reveal(context: PlaywrightCrawlingContext) -> None:
        await context.page.click("#show")
        await rows(context)

    @crawler.router.handler("product")
    async def product(context: PlaywrightCrawlingContext) -> None:
        nonlocal pages
        pages += 1
        page = context.page
        products.append({
            "id": int(await page.get_attribute("article.product", "data-id") or 0),
            "name": await page.inner_text("h1.name"),
            "price": float(await page.inner_text(".price")),
            "section": await page.inner_text(".section")})

    await crawler.run([base + "/"])
    with open(out, "w") as file:
        json.dump(products, file)
    print(json.dumps({"products": len(products), "pages": pages}), flush=True)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])))
