"""The JavaScript shop (``sandbox.js``): home -> three lists built by script -> products.

Every step renders on demand (``render="auto"``): fetched over ``http`` first, rendered
in the browser where the plain page gives nothing. Here that is the home page and the
three lists (their links and rows are inserted by script); the product pages are
complete in their HTML and stay on ``http``. A launch with the site setting
``client="browser"`` renders every page instead. Each list says what the browser does
on it: wait for the rows, scroll to the end, click to reveal.
"""

from __future__ import annotations

from chains.api import Browse, Item, Page, Parsed, Response, Site, step

SITE = Site("jsshop", base_url="http://127.0.0.1:8790")


class Product(Item, collection="products", key="id"):
    id: int
    name: str
    price: float
    section: str


def _links(response: Response, css: str) -> Parsed[Item]:
    return Parsed(follow=response.follow_all(response.css(css).getall()))


@step(url="{base_url}/", follows=("app", "scroll", "reveal"), render="auto",
      browse=Browse(wait_for="a.section"))
def home(page: Page, response: Response) -> Parsed[Item]:
    return Parsed(follow={name: response.follow_all(
        response.css(f'a.section[href$="/{name}"]::attr(href)').getall())
        for name in ("app", "scroll", "reveal")})


@step(url="{url}", follows="products", render="auto", browse=Browse(wait_for="li.row"))
def app_list(page: Page, response: Response) -> Parsed[Item]:
    return _links(response, "li.row a.product::attr(href)")


@step(url="{url}", follows="products", render="auto",
      browse=Browse(wait_for="li.row", scroll=100, scroll_until="#end"))
def scroll_list(page: Page, response: Response) -> Parsed[Item]:
    return _links(response, "li.row a.product::attr(href)")


@step(url="{url}", follows="products", render="auto",
      browse=Browse(click=("#show",), wait_for="li.row"))
def reveal_list(page: Page, response: Response) -> Parsed[Item]:
    return _links(response, "li.row a.product::attr(href)")


@step(url="{url}", render="auto")
def product(page: Page, response: Response) -> Parsed[Product]:
    article = response.css("article.product")
    if not article:
        return Parsed()
    return Parsed([Product(id=int(article.attrib["data-id"]),
                           name=article.css("h1.name::text").get(""),
                           price=float(article.css(".price::text").get("0")),
                           section=article.css(".section::text").get(""))])
