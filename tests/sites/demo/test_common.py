"""The demo's comment step on a saved page."""

from __future__ import annotations

from sites.demo.common import CommentPage, comment
from tests.sites.demo.saved import saved


def test_comment_page_yields_comments_and_the_next_cursor() -> None:
    parsed = comment(CommentPage(article_id="a00004"), saved("comments_a00004_first.json"))
    assert len(parsed.items) == 10
    assert all(c.article_id == "a00004" for c in parsed.items)
    assert [c.id for c in parsed.items][:2] == ["a00004-c000", "a00004-c001"]
    next_params = parsed.next_params()
    assert next_params is not None and next_params["article_id"] == "a00004"
    assert next_params["cursor"]
