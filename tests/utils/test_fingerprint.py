"""Canonical URLs and fingerprints: equal for the same resource, different otherwise."""

from __future__ import annotations

import pytest

from utils.fingerprint import canonical_url, id_fingerprint, request_fingerprint

SAME_RESOURCE = [
    ("http://example.com/a?x=1", "http://example.com/a?x=1#comments"),
    ("http://example.com/a", "http://example.com:80/a"),
    ("https://example.com/a", "https://example.com:443/a"),
    ("http://example.com/a", "HTTP://EXAMPLE.com/a"),
    ("http://bücher.de/a", "http://xn--bcher-kva.de/a"),
    ("http://example.com/a?x=1&y=2", "http://example.com/a?y=2&x=1"),
    ("http://example.com/a%7eb", "http://example.com/a~b"),
    ("http://example.com/a%2fb", "http://example.com/a%2Fb"),
    ("http://example.com/./a/../b", "http://example.com/b"),
    ("http://example.com/s?q=a%20b", "http://example.com/s?q=a+b"),
    ("http://example.com/s?a&b=1", "http://example.com/s?b=1&a="),
    ("http://example.com/s?a=1&&b=2", "http://example.com/s?b=2&a=1"),
    ("http://example.com/s?", "http://example.com/s"),
    ("http://a:@example.com/a", "http://a@example.com/a"),
    ("http://:@example.com/a", "http://example.com/a"),
    ("http://example.com/a|b", "http://example.com/a%7cb"),
    ("http://example.com/s?q=[1]^`{}", "http://example.com/s?q=%5B1%5D%5E%60%7B%7D"),
    ("http://example.com/caf\ud800", "http://example.com/caf%ef%bf%bd"),
    ("http://ex%61mple.com/a", "http://example.com/a"),
    ("http://example.com\\a", "http://example.com/a"),
]

OTHER_RESOURCE = [
    ("http://example.com/a", "https://example.com/a"),
    ("http://example.com/a", "http://example.com:8080/a"),
    ("https://example.com/a", "https://example.com:80/a"),
    ("http://example.com/a", "http://example.com/A"),
    ("http://example.com/a?x=1", "http://example.com/a?x=2"),
    ("http://example.com/a?x=1", "http://example.com/a"),
    ("http://example.com/a", "http://www.example.com/a"),
    ("http://example.com/a%2Fb", "http://example.com/a/b"),
    ("http://example.com/a%3Ab", "http://example.com/a:b"),
    ("http://example.com/s?q=1%2B1", "http://example.com/s?q=1+1"),
    ("http://example.com/s?tag=a&tag=b", "http://example.com/s?tag=b&tag=a"),
    ("http://u:one@example.com/a", "http://u:two@example.com/a"),
    ("http://example.com/s?q=a%20", "http://example.com/s?q=a"),
    ("http://example.com/a%5Bb", "http://example.com/a%255Bb"),
]


@pytest.mark.parametrize(("one", "other"), SAME_RESOURCE)
def test_request_fingerprints_are_equal_for_the_same_resource(one: str, other: str) -> None:
    assert request_fingerprint("GET", one) == request_fingerprint("GET", other)


@pytest.mark.parametrize(("one", "other"), OTHER_RESOURCE)
def test_request_fingerprints_differ_for_other_resources(one: str, other: str) -> None:
    assert request_fingerprint("GET", one) != request_fingerprint("GET", other)


def test_canonical_url_drops_fragment_default_port_and_case_of_host() -> None:
    assert canonical_url("HTTPS://Example.COM:443/Path?b=2&a=1#top") == (
        "https://example.com/Path?a=1&b=2"
    )


def test_canonical_url_starts_from_the_url_to_fetch() -> None:
    fetched = "http://xn--bcher-kva.de/s%c3%a9?z=1&a=%2f"
    assert canonical_url("http://B\u00fccher.de:80/s\u00e9?z=1&a=%2f#x") == (
        "http://xn--bcher-kva.de/s%C3%A9?a=%2F&z=1")
    assert canonical_url(fetched) == canonical_url(canonical_url(fetched))


def test_a_url_that_cannot_be_fetched_still_has_a_key_of_its_own() -> None:
    assert canonical_url(" http://exa mple.com/ ") == "http://exa mple.com/"
    assert request_fingerprint("GET", "mailto:a@b.c") != request_fingerprint("GET", "mailto:b@b.c")


def test_canonical_url_keeps_a_non_default_port() -> None:
    assert canonical_url("http://example.com:8080/") == "http://example.com:8080/"


def test_query_order_counts_when_the_step_keeps_it() -> None:
    one, other = "http://example.com/s?page=2&q=x", "http://example.com/s?q=x&page=2"
    assert request_fingerprint("GET", one, keep_query_order=True) != request_fingerprint(
        "GET", other, keep_query_order=True
    )


def test_kept_query_order_is_still_normalised() -> None:
    url = "HTTP://Example.com:80/s?q=a b&page=%7e2#x"
    assert canonical_url(url, keep_query_order=True) == "http://example.com/s?q=a+b&page=~2"


def test_method_and_body_are_part_of_the_request_identity() -> None:
    url = "http://example.com/api"
    assert request_fingerprint("get", url) == request_fingerprint("GET", url)
    assert request_fingerprint("GET", url) != request_fingerprint("POST", url)
    assert request_fingerprint("POST", url, b"a=1") != request_fingerprint("POST", url, b"a=2")
    assert request_fingerprint("POST", url, "a=1") == request_fingerprint("POST", url, b"a=1")


def test_only_chosen_headers_count_and_their_names_ignore_case() -> None:
    url = "http://example.com/api"

    def fp(headers: dict[str, str]) -> bytes:
        return request_fingerprint("GET", url, headers=headers, header_names=["X-Region"])

    assert fp({"x-region": "eu", "User-Agent": "a"}) == fp({"X-Region": "eu", "User-Agent": "b"})
    assert fp({"X-Region": "eu"}) != fp({"X-Region": "us"})
    assert fp({"X-Region": ""}) != fp({})


def test_id_fingerprint_ignores_field_order_and_is_stable() -> None:
    one = id_fingerprint("demo", "h5.user", 42, {"region": "eu", "size": 20})
    other = id_fingerprint("demo", "h5.user", "42", {"size": 20, "region": "eu"})
    assert one == other
    assert len(one) == 16


def test_id_fingerprint_differs_on_any_part() -> None:
    base = id_fingerprint("demo", "h5.user", 42, {"region": "eu"})
    assert base != id_fingerprint("demo", "h5.user", 43, {"region": "eu"})
    assert base != id_fingerprint("demo", "h5.feed", 42, {"region": "eu"})
    assert base != id_fingerprint("other", "h5.user", 42, {"region": "eu"})
    assert base != id_fingerprint("demo", "h5.user", 42, {"region": "us"})
    assert base != id_fingerprint("demo", "h5.user", 42)


def test_parts_are_framed_so_concatenations_do_not_collide() -> None:
    assert id_fingerprint("ab", "c", 1) != id_fingerprint("a", "bc", 1)
