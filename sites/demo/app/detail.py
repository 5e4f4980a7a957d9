"""demo.app.detail: GET /app/article/<aid> (HTML) -> the full article.

Used by ``chains.demo``: every article fans out to its comment pages.
"""

from __future__ import annotations

from parsel import Selector
from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from external_interface.storage import Item
from sites.demo import base_url
from worker import app


class DetailInput(BaseModel):
    article_id: str = Field(pattern=r"^a\d+$")


class Article(Item):
    collection = "articles"
    key_fields = ("id",)

    id: str
    title: str
    author_id: str
    published: str
    body: str
    comment_count: int


def build_request(params: DetailInput) -> Request:
    return Request(f"{base_url()}/app/article/{params.article_id}")


def parse(params: DetailInput, response: Response) -> Parsed:
    page = Selector(text=response.text).css("article")
    if not page:
        raise ParseError("no <article> on the detail page", url=response.url)
    author_href = page.css("a.author::attr(href)").get("")
    article = Article(
        id=page.attrib["data-id"],
        title=page.css("h1::text").get(""),
        author_id=author_href.rsplit("/", 1)[-1],
        published=page.css("time::attr(datetime)").get(""),
        body=" ".join(page.css("div.body ::text").getall()).strip(),
        comment_count=int(page.css("span.comment-count::text").get("0")),
    )
    return Parsed(items=[article])


@app.task(base=CrawlTask, bind=True, name="demo.app.detail", Input=DetailInput)
def detail(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of article pages."""
    return self.crawl(envelope, units, build_request, parse)
