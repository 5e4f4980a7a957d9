"""Allowed domains matched on the registrable domain, from the bundled suffix list only."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from utils import domains
from utils.domains import AllowedDomains, registrable_domain


@pytest.mark.parametrize(("host", "expected"), [
    ("shop.example.com", "example.com"), ("a.b.example.co.uk", "example.co.uk"),
    ("example.co.uk", "example.co.uk"), ("alice.github.io", "alice.github.io"),
    ("www.xn--bcher-kva.de", "xn--bcher-kva.de"), ("co.uk", None), ("github.io", None),
    ("com", None), ("localhost", None), ("sandbox.test", None), ("127.0.0.1", None),
    ("[::1]", None), ("example.com.", "example.com"),
])
def test_the_registrable_domain_is_the_name_under_a_public_suffix(
        host: str, expected: str | None) -> None:
    assert registrable_domain(host) == expected


ALLOWED = AllowedDomains(["shop.example.com", "example.co.uk", "alice.github.io",
                          "B\u00fccher.de", "localhost", "127.0.0.1", "[::1]", "sandbox.test"])


@pytest.mark.parametrize(("host", "allowed"), [
    ("shop.example.com", True), ("login.example.com", True), ("EXAMPLE.COM", True),
    ("example.com.", True), ("cdn.shop.example.com", True),
    ("evil-example.com", False), ("example.com.evil.org", False), ("example.org", False),
    ("www.example.co.uk", True), ("other.co.uk", False), ("co.uk", False),
    ("alice.github.io", True), ("www.alice.github.io", True), ("bob.github.io", False),
    ("github.io", False),
    ("www.b\u00fccher.de", True), ("xn--bcher-kva.de", True),
    ("localhost", True), ("api.localhost", True), ("127.0.0.1", True), ("2130706433", True),
    ("127.0.0.2", False), ("[::1]", True), ("[::2]", False),
    ("x.sandbox.test", True), ("test", False), ("other.test", False),
    ("", False), ("exa mple.com", False),
])
def test_a_host_is_allowed_when_it_shares_a_registrable_domain_with_an_entry(
        host: str, allowed: bool) -> None:
    assert ALLOWED.allows(host) is allowed


def test_urls_are_judged_by_their_host() -> None:
    assert ALLOWED.allows_url("https://user:pw@login.example.com:8443/x?y#z")
    assert not ALLOWED.allows_url("https://example.org/")
    assert not ALLOWED.allows_url("http://[bad/")
    assert not ALLOWED.allows_url("mailto:a@example.com")


def test_no_entries_allow_every_host() -> None:
    assert not AllowedDomains([]) and AllowedDomains([]).allows("anything.example")


@pytest.mark.parametrize(("entry", "says"), [
    ("co.uk", "public suffix"), ("github.io", "public suffix"), ("com", "public suffix"),
    ("http://example.com", "host name"), ("example.com:8080", "host name"),
    ("example.com/path", "host name"), ("", "host name"), ("exa mple.com", "invalid host"),
])
def test_an_entry_that_is_no_site_fails_when_the_job_is_declared(entry: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        AllowedDomains([entry])


def test_the_suffix_list_loads_without_network_or_disk(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the suffix list tried the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("TLDEXTRACT_CACHE", str(tmp_path))
    domains._suffixes.cache_clear()
    registrable_domain.cache_clear()
    try:
        assert registrable_domain("forums.bbc.co.uk") == "bbc.co.uk"
        assert domains._suffixes().suffix_list_urls == ()
    finally:
        domains._suffixes.cache_clear()
        registrable_domain.cache_clear()
    assert list(tmp_path.iterdir()) == []
