"""Every crawl error masks credentials as it is built, whoever raises it."""

from __future__ import annotations

import traceback

import pytest

import exceptions
from exceptions import CrawlError, ParseError, ProxyRefused, RateLimited

SECRET = "hunter2"
LEAKY_URL = f"https://crawler:{SECRET}@shop.example/p?access_token={SECRET}&page=2"
ERRORS = [cls for cls in vars(exceptions).values()
          if isinstance(cls, type) and issubclass(cls, CrawlError)]


@pytest.mark.parametrize("error", ERRORS, ids=lambda cls: cls.__name__)
def test_no_message_url_or_traceback_of_any_crawl_error_shows_a_secret(
        error: type[CrawlError]) -> None:
    try:
        raise error(f"fetching {LEAKY_URL} via http://u:{SECRET}@proxy:3128 failed",
                    url=LEAKY_URL)
    except CrawlError as raised:
        texts = [str(raised), repr(raised), raised.reason, str(raised.url),
                 *traceback.format_exception(raised)]
    assert not any(SECRET in text for text in texts)
    assert "https://crawler:***@shop.example/p?access_token=***&page=2" in texts[0]


def test_the_rest_of_an_error_is_kept_as_given() -> None:
    error = ParseError("no title on the page", url="https://shop.example/p?page=2", status=200)
    assert (str(error), error.url, error.status) == (
        "no title on the page", "https://shop.example/p?page=2", 200)
    assert ProxyRefused("407").resource == "proxy"
    assert RateLimited("429", retry_after=3.0).retry_after == 3.0
