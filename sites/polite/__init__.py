"""A shop behind ordinary defences (``sandbox.polite``): index -> category pages -> items.

Written as a new user writes a site, with no politeness and no header setting: the
runtime's defaults (a browser's headers, the adaptive throttle shared by the
cluster) are what get it through the site's User-Agent check and its rate limit.
``./control.sh bench polite`` crawls it.
"""

from __future__ import annotations

from chains.api import Item, Page, Parsed, Response, Site, step

SITE = Site("polite", base_url="http://127.0.0.1:8780")


class Product(Item, collection="products", key="id"):
    id: int
    category: str
    title: str
    price: float
    sku: str


@step(url="{base_url}/", follows="categories")
def index(page: Page, response: Response) -> Parsed[Item]:
    return Parsed(follow=response.follow_all(response.css("a.category::attr(href)").getall()))


@step(url="{url}", follows="items")
def listing(page: Page, response: Response) -> Parsed[Item]:
    items = response.follow_all(response.css("a.item::attr(href)").getall())
    return Parsed(follow=items,
                  next_page=response.follow(response.css("a.next::attr(href)").get()))


@step(url="{url}")
def item(page: Page, response: Response) -> Parsed[Product]:
    article = response.css("article")
    return Parsed([Product(id=int(article.attrib["data-id"]),
                           category=article.css(".category::text").get(""),
                           title=article.css("h1.title::text").get(""),
                           price=float(article.css(".price::text").get("")),
                           sku=article.css(".sku::text").get(""))])
