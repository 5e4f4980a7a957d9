"""demo.common.comment: GET /api/comments?article_id=A&cursor=C (JSON) -> comments.

Cursor-paged, shared by every platform; the last step of ``chains.demo``.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from base_task import CrawlTask, Parsed
from chains.engine import Envelope, Unit
from exceptions import ParseError
from external_interface.fetch import Request, Response
from external_interface.storage import Item
from sites.demo import base_url
from worker import app


class CommentInput(BaseModel):
    article_id: str = Field(pattern=r"^a\d+$")
    cursor: str | None = None


class Comment(Item):
    collection = "comments"
    key_fields = ("id",)

    id: str
    article_id: str
    user_id: str
    text: str


def build_request(params: CommentInput) -> Request:
    query = {"article_id": params.article_id}
    if params.cursor:
        query["cursor"] = params.cursor
    return Request(f"{base_url()}/api/comments", params=query)


def parse(params: CommentInput, response: Response) -> Parsed:
    data = response.json()
    if "comments" not in data:
        raise ParseError("comment list without 'comments'", url=response.url)
    comments = [Comment.model_validate(c) for c in data["comments"]]
    cursor = data.get("next_cursor")
    next_page = CommentInput(article_id=params.article_id, cursor=cursor) if cursor else None
    return Parsed(items=list(comments), next_page=next_page)


@app.task(base=CrawlTask, bind=True, name="demo.common.comment", Input=CommentInput)
def comment(self: CrawlTask, envelope: Envelope, units: list[Unit]) -> dict[str, int]:
    """A batch of comment pages."""
    return self.crawl(envelope, units, build_request, parse)
