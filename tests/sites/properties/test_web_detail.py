from __future__ import annotations

import pytest

from exceptions import ParseError
from sites.properties.web import PropertiesSettings, Property, PropertyRef, detail
from tests.sites.properties.saved import BASE, broken, saved


def property_7() -> Property:
    [item] = detail(PropertyRef(property_id=7), saved("property_000007.html")).items
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
    parsed = detail(PropertyRef(property_id=7), saved("property_000007.html"))
    assert parsed.follow == {} and parsed.next_page is None


def test_page_without_a_property_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="itemprop=name"):
        detail(PropertyRef(property_id=7), broken())


def test_request_names_the_zero_padded_property_page() -> None:
    settings = PropertiesSettings(base_url="http://127.0.0.1:9")
    assert detail.request(PropertyRef(property_id=7), settings).url == (
        "http://127.0.0.1:9/property_000007.html")
