"""Registrable domains from tldextract's bundled list, with nothing fetched."""

from __future__ import annotations

import socket

import pytest

from external_interface.links import SameSite, registrable_domain, same_site
from external_interface.links.domains import _extractor


def test_subdomains_belong_and_lookalikes_do_not() -> None:
    allowed = ["example.org"]
    assert same_site("https://www.example.org/x", allowed)
    assert same_site("http://docs.EXAMPLE.org:8080/x", allowed)
    assert not same_site("https://example.org.evil.com/x", allowed)
    assert not same_site("https://notexample.org/", allowed)
    assert not same_site("mailto:x@example.org", allowed)
    assert not same_site("ftp://example.org/x", allowed)
    assert not same_site("http://[bad/", allowed)


def test_the_public_suffix_list_knows_multi_label_suffixes() -> None:
    assert registrable_domain("a.b.example.co.uk") == "example.co.uk"
    assert not same_site("https://other.co.uk/", ["example.co.uk"])
    assert same_site("https://www.example.co.uk/", ["shop.example.co.uk"])


def test_ips_and_single_label_hosts_are_their_own_domain_and_ports_can_narrow() -> None:
    assert same_site("http://127.0.0.1:9000/x", ["127.0.0.1"])
    assert same_site("http://localhost/x", ["localhost"])
    narrow = SameSite(["127.0.0.1:8765"])
    assert narrow("http://127.0.0.1:8765/x") and not narrow("http://127.0.0.1:8766/x")
    assert SameSite(["http://example.org:80"])("http://example.org/")


def test_a_domain_without_a_host_is_refused_clearly() -> None:
    with pytest.raises(ValueError, match="no host"):
        SameSite(["http://"])


def test_nothing_is_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    registrable_domain.cache_clear()
    _extractor.cache_clear()  # built again, with the network refused

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("tldextract tried the network")

    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    assert registrable_domain("www.example.com") == "example.com"
