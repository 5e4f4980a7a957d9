"""Which hosts a job may fetch: allowed domains matched on the registrable domain.

A job names the domains it crawls (``example.com``). A host is on one of them when
both have the same registrable domain, the name a registrant owns under a public
suffix (``shop.example.co.uk`` -> ``example.co.uk``), by the Public Suffix List
with its private section, so ``alice.github.io`` and ``bob.github.io`` are two
sites, as browsers treat them. An entry ``shop.example.com`` therefore admits
``login.example.com``: a site's redirect to its own login or CDN host stays on
it, while a plain suffix match would refuse it, and would admit every site under
an entry like ``co.uk``. An entry that is itself a public suffix is refused.

A host without a public suffix (``localhost``, ``intranet``, ``sandbox.test``,
an IP address) has no registrable domain: it is on an entry equal to it or that
it is a subdomain of.

The suffix list is the snapshot tldextract ships: nothing is fetched at run time
and nothing is cached on disk.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from functools import lru_cache
from urllib.parse import urlsplit

from tldextract import TLDExtract

from utils.urls import UnsupportedURL, normalize_host


@lru_cache(maxsize=1)
def _suffixes() -> TLDExtract:
    """The bundled Public Suffix List, loaded at first use (never at import)."""
    return TLDExtract(cache_dir=None, suffix_list_urls=(), fallback_to_snapshot=True,
                      include_psl_private_domains=True)


@lru_cache(maxsize=4096)
def registrable_domain(host: str) -> str | None:
    """The registrable domain ("eTLD+1") of a normalised host; None for an IP address,
    a name without a public suffix, or a public suffix itself."""
    host = host.strip("[]").rstrip(".")
    if _is_ip(host):
        return None
    return _suffixes()(host).top_domain_under_public_suffix or None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


class AllowedDomains:
    """The domains a job allows; ``allows(host)`` by the rule in the module docstring.
    Built once per job; empty allows every host."""

    def __init__(self, domains: Iterable[str]) -> None:
        """``ValueError`` names an entry that is a URL, not a host, or a public suffix."""
        self.domains = tuple(dict.fromkeys(_entry(d) for d in domains))
        self._registrable = frozenset(filter(None, map(registrable_domain, self.domains)))
        self._bare = tuple(d for d in self.domains if registrable_domain(d) is None)
        self._origins: dict[str, bool] = {}  # judged once per scheme://host:port

    def __bool__(self) -> bool:
        return bool(self.domains)

    def __repr__(self) -> str:
        return f"AllowedDomains({list(self.domains)!r})"

    def allows(self, host: str) -> bool:
        """True when ``host`` (as a URL spells it) is on an allowed domain, or none is set."""
        if not self.domains:
            return True
        try:
            host = normalize_host(host).strip("[]").rstrip(".")
        except UnsupportedURL:
            return False
        if registrable_domain(host) in self._registrable:
            return True
        return any(host == d or host.endswith("." + d) for d in self._bare)

    def allows_url(self, url: str) -> bool:
        """``allows`` for the host of ``url``; a URL without a host is not allowed. Judged
        once per origin: a page of 10,000 links to a few hosts costs a dict lookup each."""
        if not self.domains:
            return True
        scheme, sep, rest = url.partition("://")
        end = min((i for i in map(rest.find, "/?#") if i >= 0), default=len(rest))
        origin = f"{scheme}://{rest[:end]}" if sep else url
        verdict = self._origins.get(origin)
        if verdict is None:
            try:
                host = urlsplit(origin).hostname
            except ValueError:
                host = None
            verdict = self.allows(host) if host else False
            if len(self._origins) >= 65_536:
                self._origins.clear()
            self._origins[origin] = verdict
        return verdict


def _entry(domain: str) -> str:
    """An allowed-domain entry as a normalised host."""
    text = domain.strip()
    if not text or (any(c in text for c in "/:@?#") and not text.startswith("[")):
        raise ValueError(f"allowed domain {domain!r} must be a host name such as "
                         "'example.com', without scheme, port or path")
    try:
        host = normalize_host(text).strip("[]").rstrip(".")
    except UnsupportedURL as exc:
        raise ValueError(f"allowed domain {domain!r}: {exc}") from None
    if not _is_ip(host) and _suffixes()(host).suffix == host:
        raise ValueError(f"allowed domain {domain!r} is a public suffix, shared by many "
                         "sites: name the site's own domain under it")
    return host
