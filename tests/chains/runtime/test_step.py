"""Calling a step's code: params named when invalid, bugs in site code classified."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from chains.runtime.step import Parsed, site_code, validate_params
from exceptions import InvalidParams, NotFound, ParseError
from sites.demo.h5 import FeedEntry


class PageInput(BaseModel):
    page: int = Field(ge=1)
    kind: str


def test_invalid_params_name_every_bad_field_and_value() -> None:
    with pytest.raises(InvalidParams) as caught:
        validate_params(PageInput, {"page": 0})
    message = str(caught.value)
    assert "page" in message and "kind" in message and "got 0" in message


def test_a_bug_in_site_code_becomes_a_permanent_error_naming_the_function() -> None:
    def parse_feed(_: object) -> None:
        raise KeyError("title")

    with pytest.raises(ParseError, match="parse_feed raised KeyError"):
        site_code(parse_feed, None)


def test_crawl_errors_from_site_code_keep_their_branch() -> None:
    def build(_: object) -> None:
        raise NotFound("gone")

    with pytest.raises(NotFound):
        site_code(build, None)


def test_items_and_follow_lists_are_both_fan_out_sources() -> None:
    entry = FeedEntry(id="a1", title="t", author_id="u1", author_name="n")
    parsed = Parsed(items=[entry], follow={"tags": [{"tag": "x"}]})
    records = parsed.records()
    assert records["feed_entries"] == [entry.model_dump()]
    assert records["tags"] == [{"tag": "x"}]
