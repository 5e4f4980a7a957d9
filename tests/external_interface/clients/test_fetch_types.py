"""Content types: a request that accepts pages refuses a PDF, an image or a binary
blob once its headers arrive, before a byte of its body is sent.

Each refused route answers its headers, then waits (5 s at most) to see whether
the client hangs up before it sends the body: the server, not the client, says
whether the body was read.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

from config import FetchSettings
from exceptions import ResponseRejected, UnwantedType
from external_interface.http import (
    HTML_TYPES,
    JSON_TYPES,
    PAGE_TYPES,
    SITEMAP_TYPES,
    XML_TYPES,
    Request,
)
from tests.external_interface.clients.raw_server import (
    MB,
    AnyClient,
    Handler,
    RawServer,
    client,
    fixed,
    response,
)

BODIES = {  # path: (declared type, body size)
    "/report.pdf": ("application/pdf", 2 * MB),
    "/photo.png": ("image/png", 2 * MB),
    "/blob": ("application/octet-stream", 20 * MB),
    "/archive.zip": ("application/zip", 2 * MB),
}
PAGES = {  # path: declared type, each served whole
    "/page": "text/html; charset=utf-8", "/xhtml": "application/xhtml+xml",
    "/api": "application/json", "/ld": "application/ld+json", "/text": "text/plain",
    "/sitemap.xml": "application/xml", "/feed": "application/rss+xml",
    "/sitemap.xml.gz": "application/x-gzip", "/s3.gz": "binary/octet-stream",
}


def _head_then_body(server: RawServer, hung_up: dict[str, bool], path: str,
                    kind: str, size: int) -> Handler:
    """Send the headers; send the body only if the client is still there after 5 s."""
    def handler(conn: socket.socket, head: bytes) -> bool:
        conn.sendall(response("200 OK", Content_Type=kind, Content_Length=str(size)))
        conn.settimeout(5)
        try:
            hung_up[path] = conn.recv(1) == b""
        except TimeoutError:
            hung_up[path] = False
        if not hung_up[path]:
            for _ in range(size // MB):
                server.send(conn, path, bytes(MB))
        return False
    return handler


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[RawServer, dict[str, bool]]]:
    server, hung_up = RawServer(), dict[str, bool]()
    for path, (kind, size) in BODIES.items():
        server.routes[path] = _head_then_body(server, hung_up, path, kind, size)
    for path, kind in PAGES.items():
        server.routes[path] = fixed(response("200 OK", b"ok", Content_Type=kind,
                                             Content_Length="2", Connection="close"))
    yield server, hung_up
    server.close()


@pytest.fixture
def fetcher(client_name: str) -> AnyClient:
    """Caps far above the bodies: only the type can refuse them."""
    return client(client_name, FetchSettings(deadline_s=10, max_body_bytes=64 * MB))


@pytest.mark.parametrize("path", list(BODIES))
@pytest.mark.parametrize("accept", [HTML_TYPES, PAGE_TYPES], ids=["html", "page"])
def test_a_binary_body_is_refused_before_the_server_sends_it(
        fetcher: AnyClient, served: tuple[RawServer, dict[str, bool]], path: str,
        accept: tuple[str, ...]) -> None:
    server, hung_up = served
    with pytest.raises(UnwantedType) as caught:  # a ResponseRejected the crawl skips
        fetcher.fetch(Request(server.base + path, accept_types=accept))
    assert server.finished[path].wait(10)
    assert hung_up[path] and server.sent[path] == 0
    declared = BODIES[path][0]
    assert caught.value.reason.startswith(
        f"UnwantedType: content type {declared!r} is not accepted (accepts text/html")
    assert caught.value.skip_reason == f"type {declared}"
    assert "accept_types" in caught.value.reason and caught.value.status == 200


@pytest.mark.parametrize(("accept", "paths"), [
    (PAGE_TYPES, ["/page", "/xhtml", "/api", "/ld", "/text"]),
    (HTML_TYPES, ["/page", "/xhtml"]),
    (JSON_TYPES, ["/api", "/ld"]),
    (XML_TYPES, ["/sitemap.xml", "/feed", "/xhtml"]),
    (SITEMAP_TYPES, ["/sitemap.xml", "/feed", "/xhtml", "/text", "/sitemap.xml.gz", "/s3.gz"]),
], ids=["page", "html", "json", "xml", "sitemap"])
def test_each_named_set_reads_exactly_its_types(
        fetcher: AnyClient, served: tuple[RawServer, dict[str, bool]],
        accept: tuple[str, ...], paths: list[str]) -> None:
    server, _ = served
    for path in PAGES:
        request = Request(server.base + path, accept_types=accept)
        if path in paths:
            assert fetcher.fetch(request).body == b"ok", path
        else:
            with pytest.raises(ResponseRejected, match="content type"):
                fetcher.fetch(request)


def test_a_request_that_names_no_types_still_reads_anything(
        fetcher: AnyClient, served: tuple[RawServer, dict[str, bool]]) -> None:
    server, _ = served
    assert fetcher.fetch(Request(server.base + "/sitemap.xml.gz")).body == b"ok"
