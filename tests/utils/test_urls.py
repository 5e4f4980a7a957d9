"""Links as pages write them, URLs as params carry them, secrets as logs must not show them."""

from __future__ import annotations

import ipaddress

import pytest
from pydantic import BaseModel, field_validator

from chains.runtime.step import validate_params
from exceptions import InvalidParams
from utils.urls import (
    UnsupportedURL,
    join_url,
    normalize_url,
    numeric_ipv4,
    redact_text,
    redact_url,
)

BASE = "https://Example.COM/a/b/page.html?x=1#top"


@pytest.mark.parametrize(("href", "expected"), [
    ("next.html", "https://example.com/a/b/next.html"),
    ("../up.html", "https://example.com/a/up.html"),
    ("../../../../too-far", "https://example.com/too-far"),
    ("/root?q=1", "https://example.com/root?q=1"),
    ("?page=2", "https://example.com/a/b/page.html?page=2"),
    ("//cdn.example.org/x.js", "https://cdn.example.org/x.js"),
    ("http://other.org", "http://other.org/"),
])
def test_relative_forms_resolve_like_a_browser(href: str, expected: str) -> None:
    assert join_url(BASE, href) == expected


@pytest.mark.parametrize(("href", "expected"), [
    ("  spaced out.html\n", "https://example.com/a/b/spaced%20out.html"),
    ("/a\tb\nc", "https://example.com/abc"),
    ("/search?q=two words", "https://example.com/search?q=two%20words"),
    ("\\\\evil.example\\x", "https://evil.example/x"),
    ("/caf\u00e9", "https://example.com/caf%C3%A9"),
])
def test_spaces_controls_and_backslashes_are_cleaned(href: str, expected: str) -> None:
    assert join_url(BASE, href) == expected


@pytest.mark.parametrize(("href", "expected"), [
    ("#section", "https://example.com/a/b/page.html?x=1"),
    ("other.html#frag", "https://example.com/a/b/other.html"),
    ("", "https://example.com/a/b/page.html?x=1"),
])
def test_fragments_are_dropped(href: str, expected: str) -> None:
    assert join_url(BASE, href) == expected


@pytest.mark.parametrize(("href", "expected"), [
    ("http://b\u00fccher.de/", "http://xn--bcher-kva.de/"),
    ("http://M\u00fcNCHEN.de:8080/x", "http://xn--mnchen-3ya.de:8080/x"),
    ("http://\u4f8b\u3048.\u30c6\u30b9\u30c8/", "http://xn--r8jz45g.xn--zckzah/"),
])
def test_idn_hosts_are_punycoded(href: str, expected: str) -> None:
    assert join_url(BASE, href) == expected


@pytest.mark.parametrize("href", [
    "javascript:alert(1)", "JavaScript:void(0)", " javascript:x", "java\nscript:alert(1)",
    "jav\tascript:alert(1)", "mailto:someone@example.com", "tel:+123", "data:text/html,hi",
    "ftp://example.com/f", "file:///etc/passwd", "about:blank", "blob:https://x/1",
])
def test_non_http_links_are_not_crawlable(href: str) -> None:
    assert join_url(BASE, href) is None


@pytest.mark.parametrize("href", [
    "http://[bad/x", "http://host:99999/", "http://host:-1/", "http:///nohost",
    "http://exa mple.com/", "http://a..b/", "http://bad_\u00fc\u0000.com/",
])
def test_unresolvable_links_are_none_and_strict_normalisation_says_why(href: str) -> None:
    assert join_url(BASE, href) is None
    with pytest.raises(UnsupportedURL):
        normalize_url(href)


@pytest.mark.parametrize(("url", "expected"), [
    ("http://2130706433/", "http://127.0.0.1/"),
    ("http://0x7f.1/", "http://127.0.0.1/"),
    ("http://0177.0.0.1:8080/", "http://127.0.0.1:8080/"),
    ("http://127.1/", "http://127.0.0.1/"),
    ("http://[0:0:0:0:0:0:0:1]/", "http://[::1]/"),
    ("http://[::FFFF:127.0.0.1]/", "http://[::ffff:7f00:1]/"),
])
def test_numeric_hosts_are_spelled_out(url: str, expected: str) -> None:
    assert normalize_url(url) == expected


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
