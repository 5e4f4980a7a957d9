"""The demo's comment API, shared by every platform: the last step of ``chains.demo``.

    demo.common.comment   GET /api/comments?article_id=A&cursor=C (JSON) -> comments
"""

from __future__ import annotations

from pydantic import Field

from chains.api import Input, Item, Parsed, ParseError, Response, step


class CommentPage(Input):
    article_id: str = Field(pattern=r"^a\d+$")
    cursor: str | None = None


class Comment(Item, collection="comments", key="id"):
    id: str
    article_id: str
    user_id: str
    text: str


@step(url="{base_url}/api/comments", query=("article_id", "cursor"))
def comment(params: CommentPage, response: Response) -> Parsed[Comment]:
    data = response.json()
    if "comments" not in data:
        raise ParseError("comment list without 'comments'", url=response.url)
    cursor = data.get("next_cursor")
    next_page = CommentPage(article_id=params.article_id, cursor=cursor) if cursor else None
    return Parsed([Comment.model_validate(c) for c in data["comments"]], next_page=next_page)
