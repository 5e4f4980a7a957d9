"""Calling a step's code: params named when invalid, bugs in site code classified."""

from __future__ import annotations

import pytest
from pydantic import BaseModel, Field

from chains.runtime.extensions import UnitContext
from chains.runtime.site_settings import SiteSettings
from chains.runtime.step import Parsed, site_code, step, validate_params
from exceptions import InvalidParams, NotFound, ParseError
from external_interface.http import Response
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



class Link(BaseModel):
    url: str


def test_a_parse_function_may_take_the_units_context_and_reads_the_jobs_settings() -> None:
    @step("test.web.page", url="{url}", follows="deeper")
    def page(link: Link, response: Response, unit: UnitContext) -> Parsed[FeedEntry]:
        return Parsed(follow={"deeper": [{"url": unit.settings.base_url}]})

    unit = UnitContext("j", "page", "test.web.page", "u", Link(url="http://a/"), 0,
                       SiteSettings(base_url="http://b"))
    response = Response("http://a/", 200, {}, b"")
    assert page.takes_unit
    parsed = page.parse(Link(url="http://a/"), response, unit=unit)
    assert parsed.follow == {"deeper": [{"url": "http://b"}]}
    with pytest.raises(TypeError, match="pass a UnitContext"):
        page(Link(url="http://a/"), response)


def test_a_step_declares_the_error_statuses_it_parses_as_pages() -> None:
    @step("test.web.any", url="{url}", statuses=(404, 410))
    def any_page(link: Link, response: Response) -> Parsed[FeedEntry]:
        return Parsed()

    assert any_page.request(Link(url="http://a/x"), SiteSettings()).accept_statuses == (404, 410)
    with pytest.raises(ValueError, match="only 4xx and 5xx"):
        step("test.web.bad", url="{url}", statuses=(301,))
