"""The demo's app step on a saved page: the article detail."""

from __future__ import annotations

import pytest

from exceptions import ParseError
from sites.demo.app import ArticleRef, detail
from tests.sites.demo.saved import broken, saved


def test_article_page_yields_the_full_article() -> None:
    [article] = detail(ArticleRef(article_id="a00004"), saved("article_a00004.html")).items
    assert article.id == "a00004"
    assert article.title == "Retry Ledger Retry Cookie Signal"
    assert article.comment_count == 14
    assert article.author_id.startswith("u") and article.published.startswith("2026-")
    assert len(article.body.split()) == 40


def test_page_without_an_article_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="article"):
        detail(ArticleRef(article_id="a00004"), broken())
