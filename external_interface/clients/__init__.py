"""Fetch clients: one protocol, a client per library, every bound held by each.

    clients = Clients.from_settings(settings.fetch)        # clients.factory
    response = clients.get("impersonate").fetch_raw(request, allowed)

A site picks its client in one line (``Site(..., client="impersonate")``) and a step
overrides it in one line (``@step(..., client="http")``), as Crawlee hands a crawler an
HTTP client and scrapy-impersonate lets a request pick one:

    http         the default: HTTP/1.1 on the standard library's ``http.client``, kept-alive
                 connections, the cheapest per fetch (``clients.http``)
    impersonate  HTTP/2 and a current Chrome's TLS and HTTP/2 fingerprint, on curl_cffi
                 (``clients.impersonate``), for sites that refuse a Python client's handshake
    browser      the page rendered by the system's headless Chromium through Playwright
                 (``clients.browser``), for pages built by JavaScript; the most costly

Every client keeps the same guarantees, most of them in shared code
(``clients.bounds``): the redirect policy with its hop checks (scheme, the job's
domains, the SSRF guard), the content-type gate before the body, the cap on decoded
body bytes, the status classes and masked secrets; and each keeps the wall-clock
deadline and pins the SSRF guard's checked address on its own connections. What a
client cannot keep, its module says, and the README's fetch table.

A client module imports its library; nothing here does, so a worker that never uses
``impersonate`` never loads curl_cffi
(nor Playwright, without ``browser``) (``clients.factory`` imports it on first use).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

if TYPE_CHECKING:
    from external_interface.http import Request, Response
    from utils.domains import AllowedDomains

CLIENTS = ("http", "impersonate", "browser")
WIRE_CLIENTS = ("http", "impersonate")  # speak HTTP themselves; the browser's Chromium does
DEFAULT_CLIENT = "http"
PROXY_PORTS = {"http": 80, "https": 443, "socks5": 1080, "socks5h": 1080}  # by URL scheme
# Clients that send a browser's own identity (User-Agent, client hints, Accept-Encoding):
# requests for them are not dressed in the bundled browsers' headers, which could disagree.
OWN_IDENTITY = frozenset({"impersonate", "browser"})


@runtime_checkable
class FetchClient(Protocol):
    """A way to fetch: ``name`` is what sites and steps pick it by."""

    name: str

    def fetch_raw(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """Fetch within every bound (deadline, caps, redirects, SSRF guard, content-type
        gate) without judging the status; raises only ``CrawlError`` subclasses.
        ``allowed``: the job's domains; a URL off them, the first or a redirect's,
        raises ``OffSite`` before it is requested. Safe from many threads at once."""
        ...

    def close(self) -> None:
        """Close every connection the client keeps; it may be used again after."""
        ...


def known_client(name: str, where: str) -> str:
    """``name`` if it is a client's; else ``ValueError`` naming ``where`` and the known ones."""
    if name not in CLIENTS:
        raise ValueError(f"{where}: unknown fetch client {name!r}: use one of "
                         f"{', '.join(CLIENTS)}")
    return name
