"""Which URLs belong to the sites a crawl was given: registrable domains, offline.

``example.org`` admits ``www.example.org`` and ``docs.example.org`` but not
``example.org.evil.com``; ``example.co.uk`` is a registrable domain and ``co.uk``
is not. The public suffix list is tldextract's bundled snapshot: nothing is
fetched at run time (``suffix_list_urls=()``, no cache directory), and a newer
list comes with a newer tldextract. An IP address or a single-label host
(``localhost``) is its own domain. An allowed entry with a port
(``127.0.0.1:8765``) admits that host and port only.

Fast: a filter judges each scheme-and-host once (a dict), and the domain of a
host is computed once per process (an LRU cache), so a crawl checking 100,000
links over a few hundred hosts pays for a few hundred lookups; a check is a
string split and a dict lookup (about 1 µs).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

if TYPE_CHECKING:
    import tldextract


@lru_cache(maxsize=1)
def _extractor() -> tldextract.TLDExtract:
    """tldextract on its bundled snapshot only, built on first use."""
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None,
                                 include_psl_private_domains=False)


@lru_cache(maxsize=65_536)
def registrable_domain(host: str) -> str:
    """``docs.example.co.uk`` -> ``example.co.uk``; an IP or ``localhost`` -> itself."""
    host = host.lower().rstrip(".")
    parts = _extractor()(host)
    return parts.top_domain_under_public_suffix or host


class SameSite:
    """A filter over URLs: True for those on the allowed registrable domains."""

    def __init__(self, allowed_domains: Iterable[str]) -> None:
        self.domains: set[str] = set()
        self.endpoints: set[str] = set()
        self._seen: dict[str, bool] = {}
        for entry in allowed_domains:
            netloc = urlsplit(entry if "//" in entry else f"//{entry}").netloc.lower()
            host, colon, port = netloc.rpartition("@")[2].partition(":")
            if not host:
                raise ValueError(f"allowed domain {entry!r} has no host; give example.org "
                                 "or 127.0.0.1:8765")
            if colon:
                self.endpoints.add(f"{host}:{port}")
            else:
                self.domains.add(registrable_domain(host))

    def __call__(self, url: str) -> bool:
        """Whether ``url`` is on an allowed domain; judged once per scheme and host."""
        scheme, sep, rest = url.partition("://")
        if not sep:
            return False
        end = len(rest)
        for stop in "/?#":
            found = rest.find(stop, 0, end)
            if found >= 0:
                end = found
        key = f"{scheme}://{rest[:end]}"
        verdict = self._seen.get(key)
        if verdict is None:
            verdict = self._judge(key)
            if len(self._seen) >= 65_536:
                self._seen.clear()
            self._seen[key] = verdict
        return verdict

    def _judge(self, origin: str) -> bool:
        try:
            parts = urlsplit(origin)
            host, port = parts.hostname, parts.port
        except ValueError:
            return False
        if not host or parts.scheme.lower() not in _DEFAULT_PORTS:
            return False
        if self.endpoints:
            endpoint = f"{host}:{port or _DEFAULT_PORTS[parts.scheme.lower()]}"
            if endpoint in self.endpoints:
                return True
        return registrable_domain(host) in self.domains


_DEFAULT_PORTS = {"http": 80, "https": 443}


@lru_cache(maxsize=256)
def _filter(allowed: frozenset[str]) -> SameSite:
    return SameSite(allowed)


def same_site(url: str, allowed_domains: Iterable[str]) -> bool:
    """Whether ``url`` is on one of ``allowed_domains`` (see the module docstring); the
    filter for a given set of domains is built once."""
    return _filter(frozenset(allowed_domains))(url)
