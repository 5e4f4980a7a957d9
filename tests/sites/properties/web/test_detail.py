from __future__ import annotations

import pytest

from exceptions import ParseError
from sites.properties.web.detail import DetailInput, Property, build_request, parse
from tests.sites.properties.saved import BASE, broken, saved


def property_7() -> Property:
    [item] = parse(DetailInput(property_id=7), saved("property_000007.html")).items
    assert isinstance(item, Property)
    return item


def test_detail_page_yields_one_property_keyed_by_its_number() -> None:
    item = property_7()
    assert item.id == 7 and item.item_key() == "7"
    assert item.url == f"{BASE}/property_000007.html"


def test_title_price_and_address_come_from_the_microdata() -> None:
    item = property_7()
    assert item.title == "Renovated House Overlooking The Square"  # title-cased, as Scrapy's
    assert item.price == 1887.0
    assert item.address == "62 Kings Road, Peckham, London"


def test_image_url_is_made_absolute_against_the_page() -> None:
    assert property_7().image == "http://127.0.0.1:28080/images/i03.jpg"


def test_description_is_the_whole_paragraph() -> None:
    description = property_7().description
    assert description.endswith(".") and len(description.split(". ")) >= 10


def test_detail_page_yields_no_links_to_follow() -> None:
    parsed = parse(DetailInput(property_id=7), saved("property_000007.html"))
    assert parsed.follow == {} and parsed.next_page is None


def test_page_without_a_property_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="itemprop=name"):
        parse(DetailInput(property_id=7), broken())


def test_request_names_the_zero_padded_property_page(monkeypatch: pytest.MonkeyPatch) -> None:
    from sites.properties import base_url

    base_url.cache_clear()
    monkeypatch.setenv("PROPERTIES_BASE_URL", "http://127.0.0.1:9")
    try:
        assert build_request(DetailInput(property_id=7)).url == (
            "http://127.0.0.1:9/property_000007.html")
    finally:
        base_url.cache_clear()
