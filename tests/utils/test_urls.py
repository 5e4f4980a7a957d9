"""Links as pages write them, URLs as params carry them, secrets as logs must not show them."""

from __future__ import annotations

import ipaddress
import itertools

import pytest
from pydantic import BaseModel, field_validator
from w3lib.url import safe_url_string

from chains.runtime.step import validate_params
from exceptions import InvalidParams
from utils.fingerprint import request_fingerprint
from utils.urls import (
    UnsupportedURL,
    fetch_url,
    normalize_url,
    numeric_ipv4,
    redact_data,
    redact_text,
    redact_url,
    secret_free,
    url_origin,
)

BASE = "https://Example.COM/a/b/page.html?x=1#top"
DROP = None
NEXT = "https://example.com/a/b/next.html"
SEARCH = "https://example.com/search"
LOOPBACK = "http://127.0.0.1/"

# (href on the page at BASE, the URL to fetch or DROP, the resource it names):
# hrefs naming the same resource share a label, and only they share a fingerprint.
HREFS: list[tuple[str, str | None, str]] = [
    ("next.html", NEXT, "next"),
    ("./next.html", NEXT, "next"),
    ("../b/next.html", NEXT, "next"),
    ("  next.html\n", NEXT, "next"),
    ("next.html#reviews", NEXT, "next"),
    ("/a/b/ne\txt.html", NEXT, "next"),
    ("HTTPS://EXAMPLE.COM/a/b/next.html", NEXT, "next"),
    ("https://example.com:443/a/b/next.html", NEXT, "next"),
    ("https://example.com/a/./c/../b/next.html", NEXT, "next"),
    ("https://example.com/a/b/%2e/next.html", NEXT, "next"),
    ("//example.com/a/b/next.html", NEXT, "next"),
    ("\\a\\b\\next.html", NEXT, "next"),
    ("https:next.html", NEXT, "next"),
    ("http://example.com:80/a/b/next.html", "http://example.com/a/b/next.html", "http-next"),
    ("https://example.com:8443/a/b/next.html", "https://example.com:8443/a/b/next.html",
     "port-8443"),
    ("https://example.com:08443/a/b/next.html", "https://example.com:8443/a/b/next.html",
     "port-8443"),
    ("/A/b/next.html", "https://example.com/A/b/next.html", "upper-path"),
    ("../../../../too-far", "https://example.com/too-far", "too-far"),
    ("/too-far", "https://example.com/too-far", "too-far"),
    ("#section", "https://example.com/a/b/page.html?x=1", "self"),
    ("?x=1", "https://example.com/a/b/page.html?x=1", "self"),
    ("?page=2", "https://example.com/a/b/page.html?page=2", "page-2"),
    ("page.html?page=2#top", "https://example.com/a/b/page.html?page=2", "page-2"),
    ("/search?q=red&page=2", SEARCH + "?q=red&page=2", "red-2"),
    ("/search?page=2&q=red", SEARCH + "?page=2&q=red", "red-2"),
    ("/search?q=red&page=3", SEARCH + "?q=red&page=3", "red-3"),
    ("/search?q=two words", SEARCH + "?q=two%20words", "two-words"),
    ("/search?q=two+words", SEARCH + "?q=two+words", "two-words"),
    ("/search?q=two%20words", SEARCH + "?q=two%20words", "two-words"),
    ("/search?q=1%2B1", SEARCH + "?q=1%2B1", "one-plus-one"),
    ("/x%2fy", "https://example.com/x%2fy", "x-escaped-slash-y"),
    ("/x%2Fy", "https://example.com/x%2Fy", "x-escaped-slash-y"),
    ("/x/y", "https://example.com/x/y", "x-slash-y"),
    ("/x%3ay", "https://example.com/x%3ay", "x-escaped-colon-y"),
    ("/x:y", "https://example.com/x:y", "x-colon-y"),
    ("/%7euser", "https://example.com/%7euser", "tilde-user"),
    ("/~user", "https://example.com/~user", "tilde-user"),
    ("/caf\u00e9", "https://example.com/caf%C3%A9", "cafe"),
    ("/caf%c3%a9", "https://example.com/caf%c3%a9", "cafe"),
    ("http://b\u00fccher.de/", "http://xn--bcher-kva.de/", "buecher"),
    ("http://B\u00dcCHER.DE", "http://xn--bcher-kva.de/", "buecher"),
    ("http://xn--bcher-kva.de/", "http://xn--bcher-kva.de/", "buecher"),
    ("http://user:pass@example.com/private", "http://user:pass@example.com/private",
     "private-as-user"),
    ("http://a:@example.com/private", "http://a@example.com/private", "private-as-a"),
    ("http://a@example.com/private", "http://a@example.com/private", "private-as-a"),
    ("/search?q=red #x", SEARCH + "?q=red%20", "red-space"),
    ("/caf\ud800", "https://example.com/caf%EF%BF%BD", "replacement"),
    ("http://\U0001f4a9.la/", "http://xn--ls8h.la/", "pile"),
    ("http://example.com/private", "http://example.com/private", "private"),
    ("http://2130706433/", LOOPBACK, "loopback"),
    ("http://0x7f.1/", LOOPBACK, "loopback"),
    ("http://0177.0.0.1:80/", LOOPBACK, "loopback"),
    ("http://127.1", LOOPBACK, "loopback"),
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/", "v6-loopback"),
    ("http://[::FFFF:127.0.0.1]/", "http://[::ffff:7f00:1]/", "v4-mapped-loopback"),
    ("javascript:alert(1)", DROP, ""),
    ("JavaScript:void(0)", DROP, ""),
    ("java\nscript:alert(1)", DROP, ""),
    ("mailto:someone@example.com", DROP, ""),
    ("tel:+123", DROP, ""),
    ("data:text/html,hi", DROP, ""),
    ("ftp://example.com/f", DROP, ""),
    ("", "https://example.com/a/b/page.html?x=1", "self"),
    (" \t\n ", "https://example.com/a/b/page.html?x=1", "self"),
    ("http://[bad/x", DROP, ""),
    ("http://host:99999/", DROP, ""),
    ("http://exa mple.com/", DROP, ""),
    ("http://1.2.3.4.5/", DROP, ""),
    ("http://256.0.0.1/", DROP, ""),
    ("http://[google.com]/", DROP, ""),
    ("http://../", DROP, ""),
    ("http://a.b.xn--pokxncvks/", DROP, ""),
]
FETCHED = [(href, url, label) for href, url, label in HREFS if url is not None]


@pytest.mark.parametrize(("href", "expected", "label"), HREFS)
def test_each_href_gives_the_url_a_browser_would_fetch_or_is_dropped(
        href: str, expected: str | None, label: str) -> None:
    assert fetch_url(href, BASE) == expected


@pytest.mark.parametrize(("href", "expected", "label"), FETCHED)
def test_the_url_to_fetch_is_already_in_its_final_form(
        href: str, expected: str, label: str) -> None:
    assert normalize_url(expected) == expected
    assert fetch_url(expected, "http://elsewhere.example/") == expected


def test_fingerprints_are_equal_exactly_for_hrefs_naming_the_same_resource() -> None:
    keys = {href: request_fingerprint("GET", url) for href, url, _ in FETCHED}
    for (one, _, one_label), (other, _, other_label) in itertools.combinations(FETCHED, 2):
        same = one_label == other_label
        assert (keys[one] == keys[other]) is same, (one, other)


def test_on_these_hrefs_scrapys_w3lib_would_fetch_the_same_url() -> None:
    """Where WHATWG and RFC 3986 agree, the URL is what Scrapy's w3lib writes too."""
    for href, url, _ in FETCHED:
        assert safe_url_string(url) == url, href


@pytest.mark.parametrize("href", [
    "http://[bad/x", "http://host:99999/", "http://host:-1/", "http://exa mple.com/",
    "http://a..b/", "http://bad_\u00fc\u0000.com/", "http://example.123/", "/relative",
    "", "mailto:a@b.c",
])
def test_strict_normalisation_says_why_a_url_cannot_be_fetched(href: str) -> None:
    with pytest.raises(UnsupportedURL, match=r"\w"):
        normalize_url(href)


def test_a_relative_href_on_a_page_that_is_no_url_is_dropped() -> None:
    assert fetch_url("next.html", "mailto:a@b.c") is None
    assert fetch_url("https://example.com/x", "not a url") == "https://example.com/x"


@pytest.mark.parametrize(("host", "expected"), [
    ("2130706433", "127.0.0.1"), ("0x7f.1", "127.0.0.1"), ("0177.0.0.1", "127.0.0.1"),
    ("127.1", "127.0.0.1"), ("0x7F000001", "127.0.0.1"), ("10.1", "10.0.0.1"),
    ("1.256", "1.0.1.0"), ("192.168.1.1.", "192.168.1.1"), ("0", "0.0.0.0"),
])
def test_numeric_ipv4_reads_hosts_as_inet_aton_does(host: str, expected: str) -> None:
    assert numeric_ipv4(host) == ipaddress.IPv4Address(expected)


@pytest.mark.parametrize("host", ["example.com", "256.1.1.1", "1.2.3.4.5", "08", "1..2",
                                  "0x1g", "4294967296", ""])
def test_names_and_overflows_are_not_numeric_hosts(host: str) -> None:
    assert numeric_ipv4(host) is None


class LinkInput(BaseModel):
    """A step Input carrying a URL param, as a user would write one."""

    url: str

    @field_validator("url")
    @classmethod
    def fetchable(cls, value: str) -> str:
        return normalize_url(value)


@pytest.mark.parametrize("params", [
    {"url": "javascript:alert(1)"}, {"url": "http://[bad"}, {"url": 42}, {}, {"url": None},
])
def test_params_that_fail_validation_are_invalid_params_naming_the_field(
        params: dict[str, object]) -> None:
    with pytest.raises(InvalidParams, match="url"):
        validate_params(LinkInput, params)


def test_valid_url_params_arrive_normalised() -> None:
    model = validate_params(LinkInput, {"url": " http://B\u00fccher.de/a b#x"})
    assert isinstance(model, LinkInput) and model.url == "http://xn--bcher-kva.de/a%20b"


@pytest.mark.parametrize(("url", "expected"), [
    ("redis://:hunter2@redis.internal:6379/0", "redis://:***@redis.internal:6379/0"),
    ("amqp://crawler:hunter2@rabbit:5672//", "amqp://crawler:***@rabbit:5672//"),
    ("mongodb://app:hun%40ter2@m1:27017,m2:27017/items?authSource=admin",
     "mongodb://app:***@m1:27017,m2:27017/items?authSource=admin"),
    ("http://user:p@ss@proxy.example:3128", "http://user:***@proxy.example:3128"),
    ("https://ghp_TOKEN@github.com/org/repo", "https://***@github.com/org/repo"),
    ("socks5h://u:hunter2@[::1]:1080", "socks5h://u:***@[::1]:1080"),
    ("https://api.example/x?api_key=hunter2&page=2", "https://api.example/x?api_key=***&page=2"),
    ("https://h/x?access_token=hunter2", "https://h/x?access_token=***"),
    ("https://h/path@thing?q=1", "https://h/path@thing?q=1"),
    ("sqlite:////data/items.db", "sqlite:////data/items.db"),
])
def test_credentials_are_masked_in_urls(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_credentials_are_masked_anywhere_in_a_log_line() -> None:
    line = ("worker up: broker=redis://:hunter2@r:6379/0 state='amqp://u:hunter2@q//' "
            "proxy=(http://p:hunter2@10.0.0.1:3128)")
    masked = redact_text(line)
    assert "hunter2" not in masked
    assert "redis://:***@r:6379/0" in masked and "http://p:***@10.0.0.1:3128" in masked


@pytest.mark.parametrize(("url", "origin"), [
    ("https://hooks.example.com/services/T0/B0/s3cret", "https://hooks.example.com"),
    ("http://u:pw@127.0.0.1:9/x?token=1", "http://127.0.0.1:9"),
    ("http://[::1]:8080/hook", "http://[::1]:8080"),
    ("hooks.example.com/services/s3cret", "(unparseable URL)"),
    ("http://[bad/x", "(unparseable URL)"),
])
def test_an_endpoint_whose_path_is_its_secret_is_shown_by_its_origin(
        url: str, origin: str) -> None:
    assert url_origin(url) == origin


def test_an_error_may_be_chained_only_when_no_cause_quotes_a_secret() -> None:
    try:
        try:
            raise OSError("cannot reach http://u:hunter2@10.0.0.7:3128")
        except OSError as cause:
            raise RuntimeError("proxy failed") from cause
    except RuntimeError as leaky:
        assert not secret_free(leaky)
    assert secret_free(RuntimeError("proxy failed")) and secret_free(OSError("reset"))


def test_every_string_in_a_units_params_is_masked_for_showing() -> None:
    params = {"url": "https://u:pw1@h/x?token=t0k", "seen": ["redis://:pw2@r:6379/0", 3],
              "nested": {"proxy": "http://a:pw3@p:8080"}, "page": 2, "note": None}
    assert redact_data(params) == {
        "url": "https://u:***@h/x?token=***", "seen": ["redis://:***@r:6379/0", 3],
        "nested": {"proxy": "http://a:***@p:8080"}, "page": 2, "note": None}
    assert params["url"] == "https://u:pw1@h/x?token=t0k"  # the given value is left alone
