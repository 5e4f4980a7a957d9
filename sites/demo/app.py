"""The demo's app platform: article pages (device registration is in ``pools``).

    demo.app.detail   GET /app/article/<aid> (HTML, a registered device) -> the article
"""

from __future__ import annotations

from pydantic import Field

from chains.api import Input, Item, Parsed, ParseError, Response, step


class ArticleRef(Input):
    article_id: str = Field(pattern=r"^a\d+$")


class Article(Item, collection="articles", key="id"):
    id: str
    title: str
    author_id: str
    published: str
    body: str
    comment_count: int


@step(url="{base_url}/app/article/{article_id}")
def detail(params: ArticleRef, response: Response) -> Parsed[Article]:
    page = response.css("article")
    if not page:
        raise ParseError("no <article> on the detail page", url=response.url)
    return Parsed([Article(
        id=page.attrib["data-id"], title=page.css("h1::text").get(""),
        author_id=page.css("a.author::attr(href)").get("").rsplit("/", 1)[-1],
        published=page.css("time::attr(datetime)").get(""),
        body=" ".join(page.css("div.body ::text").getall()).strip(),
        comment_count=int(page.css("span.comment-count::text").get("0")))])
