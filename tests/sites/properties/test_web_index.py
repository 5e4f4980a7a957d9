from __future__ import annotations

import pytest

from exceptions import ParseError
from sites.properties.web import IndexPage, PropertiesSettings, index
from tests.sites.properties.saved import broken, saved


def test_index_page_fans_out_its_30_detail_links_in_page_order() -> None:
    parsed = index(IndexPage(page=0), saved("index_00000.html"))
    assert parsed.follow["details"] == [{"property_id": i} for i in range(30)]


def test_index_page_yields_no_items() -> None:
    assert index(IndexPage(page=0), saved("index_00000.html")).items == []


def test_next_link_continues_to_the_next_index_page() -> None:
    parsed = index(IndexPage(page=0), saved("index_00000.html"))
    assert parsed.next_params() == {"page": 1, "stop": None}


def test_last_index_page_has_links_but_no_next_page() -> None:
    parsed = index(IndexPage(page=1), saved("index_00001_last.html"))
    assert parsed.follow["details"] == [{"property_id": i} for i in range(30, 60)]
    assert parsed.next_page is None


def test_a_shard_stops_before_the_page_where_the_next_shard_starts() -> None:
    assert index(IndexPage(page=0, stop=1), saved("index_00000.html")).next_page is None
    parsed = index(IndexPage(page=0, stop=2), saved("index_00000.html"))
    assert parsed.next_params() == {"page": 1, "stop": 2}


def test_page_without_links_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="detail links"):
        index(IndexPage(page=0), broken())


def test_request_names_the_zero_padded_index_page() -> None:
    settings = PropertiesSettings(base_url="http://127.0.0.1:9/site/")
    assert index.request(IndexPage(page=42), settings).url == (
        "http://127.0.0.1:9/site/index_00042.html")
