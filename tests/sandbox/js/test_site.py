"""The JavaScript shop, read over plain HTTP: deterministic from its seed, its lists empty
without a browser, its product pages complete, its blocked resources counted."""

from __future__ import annotations

import json
import urllib.request

from sandbox.js.__main__ import serve
from sandbox.js.catalogue import SECTIONS, Catalogue
from tests.external_interface.clients.browser_support import shop


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return bytes(answer.read())


def test_the_same_seed_makes_the_same_shop_and_another_seed_another() -> None:
    assert Catalogue(3, 30).expected() == Catalogue(3, 30).expected()
    assert Catalogue(3, 30).expected() != Catalogue(4, 30).expected()
    assert {p.section for p in Catalogue(1, 30).products} == set(SECTIONS)


def test_lists_are_shells_without_a_script_and_products_are_complete() -> None:
    with shop(products=6) as server:
        expected = json.loads(_get(server.url + "/__expected"))
        assert expected["pages"] == 1 + 3 + 6
        assert b'class="row"' not in _get(server.url + "/app")
        assert b'href="/app"' not in _get(server.url + "/")
        first = expected["products"][0]
        page = _get(f"{server.url}/product/{first['id']}").decode()
        assert first["name"] in page and str(first["price"]) in page
        scroll = json.loads(_get(server.url + "/api/scroll?offset=0"))
        assert scroll["more"] is False and len(scroll["rows"]) == 2


def test_requests_for_images_fonts_and_media_are_counted() -> None:
    with shop() as server:
        assert json.loads(_get(server.url + "/__blocked")) == {"image": 0, "font": 0,
                                                                "media": 0}
        _get(server.url + "/img/1000.png")
        _get(server.url + "/font/shop.woff2")
        assert json.loads(_get(server.url + "/__blocked")) == {"image": 1, "font": 1,
                                                                "media": 0}


def test_a_troubled_product_page_carries_its_script_the_first_time_only() -> None:
    server = serve(Catalogue(1, 6), hang=1, hog=1).start_in_thread()
    try:
        hang, hog = 1005, 1004  # the last product hangs, the one before it hogs
        first = _get(f"{server.url}/product/{hang}").decode()
        assert "/fault/never.js" in first and 'data-id="1005"' in first
        assert "/fault/never.js" not in _get(f"{server.url}/product/{hang}").decode()
        assert b"kept.push" in _get(f"{server.url}/product/{hog}")
        assert b"kept.push" not in _get(f"{server.url}/product/{hog}")
    finally:
        server.close()
