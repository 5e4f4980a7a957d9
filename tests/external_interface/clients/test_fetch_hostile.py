"""Hostile and broken servers: every case ends in a classified error or a correct
result, within the fetch deadline, without reading what it should not.

The servers are raw loopback sockets (``raw_server``) that write exactly the
bytes a broken or hostile server would: lying Content-Length, broken chunked
framing, resets, silence, drips, endless bodies and decompression bombs.
"""

from __future__ import annotations

import gzip
import re
import socket
import struct
import time
import tracemalloc
from collections.abc import Callable, Iterator

import pytest

from exceptions import ClientError, NetworkError, ResponseRejected
from external_interface.http import HTML_TYPES, Request
from tests.external_interface.clients.raw_server import (
    MB,
    WAITED_S,
    AnyClient,
    Handler,
    RawServer,
    compressed,
    drip,
    endless,
    fetch_fails,
    fixed,
    hostile_fetcher,
    redirect,
    response,
    then_silent,
)

CAP = 1 * MB


BOMBS: dict[str, tuple[str, Callable[[], bytes]]] = {
    "gzip": ("gzip", lambda: compressed("gzip")),
    "deflate": ("deflate", lambda: compressed("deflate")),
    "deflate-raw": ("deflate", lambda: compressed("deflate-raw")),
    "br": ("br", lambda: compressed("br")),
    "gzip-gzip": ("gzip, gzip", lambda: gzip.compress(compressed("gzip"))),
    "deflate-gzip": ("deflate, gzip", lambda: gzip.compress(compressed("deflate"))),
}


def _drip_status(conn: socket.socket, head: bytes) -> bool:
    for byte in response("200 OK", b"late", Content_Length="4"):
        conn.sendall(bytes([byte]))
        time.sleep(0.2)
    return False


def _reset(conn: socket.socket, head: bytes) -> bool:
    conn.sendall(response("200 OK", b"x" * 1000, Content_Length="100000"))
    time.sleep(0.05)
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    return False  # closing with linger 0 sends RST


def _chunked(body: bytes) -> Handler:
    return fixed(response("200 OK", body, Transfer_Encoding="chunked"))


def _stacked(layers: int) -> Handler:
    """A page gzipped ``layers`` times, sent in 100-byte chunks (issue 32's regression)."""
    body = b"<p>stacked</p>" * 100
    for _ in range(layers):
        body = gzip.compress(body)
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 100]), body[i:i + 100])
                      for i in range(0, len(body), 100))
    return fixed(response("200 OK", chunks + b"0\r\n\r\n", Transfer_Encoding="chunked",
                          Content_Type="text/html", Content_Encoding=", ".join(["gzip"] * layers)))


def _timing_and_framing(srv: RawServer) -> dict[str, Handler]:
    return {
        "/ok": fixed(response("200 OK", b"hello", Content_Length="5",
                              Content_Type="text/html; charset=utf-8"), keep=True),
        "/silent": then_silent(srv),
        "/drip-body": drip(response("200 OK", Content_Length="100000"), 0.05),
        "/drip-headers": drip(b"HTTP/1.1 200 OK\r\nX-Drip: ", 0.05),
        "/drip-status": _drip_status,
        "/cl-short": fixed(response("200 OK", b"helloWORLD", Content_Length="5"), keep=True),
        "/cl-long-close": fixed(response("200 OK", b"hello", Content_Length="100")),
        "/cl-long-hold": then_silent(srv, response("200 OK", b"hi", Content_Length="100")),
        "/cl-conflict": fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 10"
                              b"\r\n\r\nhelloWORLD"),
        "/head-garbage": fixed(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nnot a header\r\n"
                               b"\r\nok"),
        "/head-bad-name": fixed(b"HTTP/1.1 200 OK\r\nContent Length: 2\r\n\r\nok"),
        "/head-folded-first": fixed(b"HTTP/1.1 200 OK\r\n X-Fold: a\r\nContent-Length: 2"
                                    b"\r\n\r\nok"),
        "/head-folded": fixed(b"HTTP/1.1 200 OK\r\nX-Fold: one\r\n\t two \r\nSet-Cookie: a=1"
                              b"\r\nset-cookie: b=2\r\nContent-Length: 2\r\n\r\nok", keep=True),
        "/head-bare-cr": fixed(b"HTTP/1.1 200 OK\r\nX-Cr: left\rright\r\nContent-Length: 2"
                               b"\r\n\r\nok"),
        "/chunk-bad-size": _chunked(b"zz\r\nhello\r\n0\r\n\r\n"),
        "/chunk-truncated": _chunked(b"5\r\nhello\r\n"),
        "/chunk-short-data": _chunked(b"a\r\nhello"),
        "/chunk-huge-size": _chunked(b"ffffffffffffffff\r\nhello"),
        "/chunk-garbage-ext": _chunked(b"5;\x00\xff=\r\nhello\r\n0\r\n\r\n"),
        "/reset": _reset,
        "/endless-headers": endless(srv, "/endless-headers", b"HTTP/1.1 200 OK\r\n",
                                    b"X-Many: header\r\n"),
    }


def _size_and_type(srv: RawServer) -> dict[str, Handler]:
    piece = b"x" * 65536
    chunk = b"%x\r\n" % len(piece) + piece + b"\r\n"
    zipped = gzip.compress(b"\0" * 8 * MB)
    chunked, video = response("200 OK", Transfer_Encoding="chunked"), response(
        "200 OK", Content_Type="video/mp4", Transfer_Encoding="chunked")
    octet = response("200 OK", Content_Type="application/octet-stream",
                     Content_Length=str(512 * MB))
    routes = {
        "/huge-chunked": endless(srv, "/huge-chunked", chunked, chunk),
        "/huge-close": endless(srv, "/huge-close", response("200 OK", Connection="close"), piece),
        "/video": endless(srv, "/video", video, chunk),
        "/octet": endless(srv, "/octet", octet, piece),
        "/no-type": fixed(response("200 OK", b"<p>hi</p>", Content_Length="9")),
        "/zip-file": fixed(response("200 OK", zipped, Content_Type="application/x-gzip",
                                    Content_Length=str(len(zipped)))),
        "/garbage-gzip": fixed(response("200 OK", b"this is not gzip at all",
                                        Content_Encoding="gzip", Content_Length="23")),
        "/stacked-5": _stacked(5),
        "/stacked-10": _stacked(10),
    }
    for name, (encoding, build) in BOMBS.items():
        body = build()  # built before any fetch: building one takes a while
        routes[f"/bomb/{name}"] = fixed(response("200 OK", body, Content_Encoding=encoding,
                                                 Content_Length=str(len(body))))
    return routes


def _redirects() -> dict[str, Handler]:
    return {
        "/to-bomb": redirect("/bomb/gzip"),
        "/redirect-carrying-bomb": fixed(response(
            "302 Found", compressed("gzip"), Location="/ok", Content_Encoding="gzip",
            Content_Length="9999999")),
        "/redirect-dripping": drip(response("302 Found", Location="/ok",
                                            Content_Length="100000"), 0.05),
    }


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    srv = RawServer()
    srv.routes = {**_timing_and_framing(srv), **_size_and_type(srv), **_redirects()}
    yield srv
    srv.close()


@pytest.fixture
def fetcher(client_name: str) -> AnyClient:
    return hostile_fetcher(CAP, client_name)


@pytest.fixture
def waiting(client_name: str) -> AnyClient:
    """For the cases that wait out the deadline: a shorter one."""
    return hostile_fetcher(CAP, client_name, WAITED_S)


@pytest.fixture
def patient(client_name: str) -> AnyClient:
    """Connect and read timeouts past the deadline: only the deadline can end a fetch."""
    return hostile_fetcher(CAP, client_name, WAITED_S, timeouts_s=(10, 10))


# -- no answer, slow answers ---------------------------------------------------
def test_connect_to_a_listener_with_a_full_backlog_times_out(waiting: AnyClient) -> None:
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port, fillers = listener.getsockname()[1], []
    try:
        for _ in range(16):  # fill the accept queue until a connect stalls
            filler = socket.socket()
            filler.settimeout(0.2)
            fillers.append(filler)
            try:
                filler.connect(("127.0.0.1", port))
            except TimeoutError:
                break
        error = fetch_fails(waiting, Request(f"http://127.0.0.1:{port}/"), NetworkError)
        assert re.search(r"(?i)connection\b.* timed out", str(error)), error
    finally:
        for filler in fillers:
            filler.close()
        listener.close()


@pytest.mark.parametrize("path", ["/silent", "/drip-body", "/drip-headers", "/drip-status",
                                  "/cl-long-hold"])
def test_silence_and_drips_end_at_the_wall_clock_deadline(
        waiting: AnyClient, server: RawServer, path: str) -> None:
    fetch_fails(waiting, Request(server.base + path), NetworkError)


@pytest.mark.parametrize("peer", [
    then_silent,  # accepts, never answers the ClientHello
    lambda srv: drip(b"\x16\x03\x03\x40\x00", 0.05),  # a 16 KB handshake record, byte by byte
])
def test_a_stalled_or_dripping_tls_handshake_ends_at_the_deadline(
        peer: Callable[[RawServer], Handler], patient: AnyClient) -> None:
    srv = RawServer()
    srv.raw = peer(srv)
    try:
        fetch_fails(patient, Request(f"https://127.0.0.1:{srv.port}/"), NetworkError)
    finally:
        srv.close()


def test_a_kept_alive_connection_obeys_the_deadline_of_the_fetch_using_it(
        waiting: AnyClient, server: RawServer) -> None:
    before = server.connections
    waiting.fetch(Request(server.base + "/ok"))
    with pytest.raises(NetworkError, match="fetch deadline passed"):
        waiting.fetch(Request(server.base + "/drip-headers"))
    assert server.connections == before + 1  # the drip came on the /ok connection


@pytest.mark.parametrize("target", ["http://127.0.0.1:9/page", "https://127.0.0.1:9/page"])
@pytest.mark.parametrize("peer", [
    then_silent,  # accepts, never answers the request or the CONNECT
    lambda srv: drip(b"HTTP/1.1 200 OK\r\nX-Drip: ", 0.05),  # its headers, byte by byte
])
def test_a_silent_or_dripping_proxy_ends_at_the_deadline(
        target: str, peer: Callable[[RawServer], Handler], patient: AnyClient) -> None:
    proxy = RawServer()
    proxy.raw = peer(proxy)
    try:
        with pytest.raises(NetworkError, match="fetch deadline passed"):
            patient.fetch(Request(target, proxy=f"http://127.0.0.1:{proxy.port}"))
    finally:
        proxy.close()


def test_a_dripping_redirect_body_is_never_waited_for(
        fetcher: AnyClient, server: RawServer) -> None:
    assert fetcher.fetch(Request(server.base + "/redirect-dripping")).body == b"hello"


# -- framing ---------------------------------------------------------------------
def test_content_length_shorter_than_the_body_is_obeyed_and_does_not_poison_keepalive(
        fetcher: AnyClient, server: RawServer) -> None:
    assert fetcher.fetch(Request(server.base + "/cl-short")).body == b"hello"
    assert fetcher.fetch(Request(server.base + "/ok")).body == b"hello"


def test_content_length_longer_than_the_body_is_a_network_error(
        fetcher: AnyClient, server: RawServer) -> None:
    error = fetch_fails(fetcher, Request(server.base + "/cl-long-close"), NetworkError)
    assert "IncompleteRead" in str(error) or "broken" in str(error)


def test_conflicting_content_lengths_are_refused(fetcher: AnyClient, server: RawServer) -> None:
    fetch_fails(fetcher, Request(server.base + "/cl-conflict"), ResponseRejected)


@pytest.mark.parametrize("path", ["/head-garbage", "/head-bad-name", "/head-folded-first"])
def test_a_head_with_a_line_that_is_no_header_field_is_refused(
        fetcher: AnyClient, server: RawServer, path: str) -> None:
    error = fetch_fails(fetcher, Request(server.base + path), ResponseRejected)
    assert "response headers are invalid" in str(error)


def test_folded_and_repeated_fields_are_read_as_one_value_each(
        fetcher: AnyClient, server: RawServer) -> None:
    response = fetcher.fetch(Request(server.base + "/head-folded"))
    assert response.body == b"ok"
    assert response.headers["x-fold"] == "one two"
    assert response.headers.getlist("SET-COOKIE") == ["a=1", "b=2"]  # type: ignore[attr-defined]


def test_a_bare_cr_in_a_field_is_a_space_to_http_and_refused_by_impersonate(
        fetcher: AnyClient, server: RawServer) -> None:
    """RFC 9112 lets a recipient do either; libcurl refuses."""
    if fetcher.name == "http":
        assert fetcher.fetch(Request(server.base + "/head-bare-cr")).headers["X-Cr"] == \
            "left right"
    else:
        fetch_fails(fetcher, Request(server.base + "/head-bare-cr"), ResponseRejected)


@pytest.mark.parametrize("path", ["/chunk-bad-size", "/chunk-truncated", "/chunk-short-data",
                                  "/chunk-huge-size", "/reset"])
def test_broken_chunked_encoding_and_resets_are_network_errors(
        fetcher: AnyClient, server: RawServer, path: str) -> None:
    fetch_fails(fetcher, Request(server.base + path), NetworkError)


def test_a_chunk_extension_full_of_garbage_still_reads_the_chunks(
        fetcher: AnyClient, server: RawServer) -> None:
    assert fetcher.fetch(Request(server.base + "/chunk-garbage-ext")).body == b"hello"


def test_endless_headers_are_a_classified_error(fetcher: AnyClient, server: RawServer) -> None:
    fetch_fails(fetcher, Request(server.base + "/endless-headers"), NetworkError)


@pytest.mark.parametrize("url", ["http://[bad/", "", "   ", "http://h:99999/", "http://a..b/",
                                 "http://\x00/", "javascript:alert(1)", "//no-scheme/x"])
def test_a_malformed_request_url_is_a_permanent_error_not_a_crash(
        fetcher: AnyClient, url: str) -> None:
    with pytest.raises((ClientError, ResponseRejected)):
        fetcher.fetch(Request(url))


def test_a_header_injection_attempt_is_refused_before_sending(
        fetcher: AnyClient, server: RawServer) -> None:
    with pytest.raises(ClientError, match="header"):
        fetcher.fetch(Request(server.base + "/ok", headers={"X-Id": "1\r\nX-Evil: 1"}))
    assert not any(b"X-Evil" in head for head in server.heads)


# -- size --------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["/huge-chunked", "/huge-close"])
def test_an_endless_body_is_cut_at_the_cap_long_before_its_end(
        fetcher: AnyClient, server: RawServer, path: str) -> None:
    error = fetch_fails(fetcher, Request(server.base + path), ResponseRejected)
    assert "decoded bytes" in str(error)
    assert server.finished[path].wait(5)
    assert server.sent[path] < 64 * MB  # of 256 MB on offer; the rest sat in socket buffers


@pytest.mark.parametrize("name", list(BOMBS))
def test_decompression_bombs_stop_at_the_decoded_cap(
        fetcher: AnyClient, server: RawServer, name: str) -> None:
    fetcher.fetch(Request(server.base + "/ok"))  # warm the connection pool
    tracemalloc.start()
    try:
        error = fetch_fails(fetcher, Request(f"{server.base}/bomb/{name}"), ResponseRejected)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "decoded bytes" in str(error)
    assert peak < 16 * MB  # a 64 MB bomb never lands in memory


def test_a_bomb_behind_a_redirect_stops_at_the_cap(
        fetcher: AnyClient, server: RawServer) -> None:
    error = fetch_fails(fetcher, Request(server.base + "/to-bomb"), ResponseRejected)
    assert "decoded bytes" in str(error) and str(error.url).endswith("/bomb/gzip")


def test_a_redirect_carrying_a_bomb_body_is_followed_without_reading_it(
        fetcher: AnyClient, server: RawServer) -> None:
    assert fetcher.fetch(Request(server.base + "/redirect-carrying-bomb")).body == b"hello"


def test_a_body_that_is_not_what_its_encoding_says_is_rejected(
        fetcher: AnyClient, server: RawServer) -> None:
    error = fetch_fails(fetcher, Request(server.base + "/garbage-gzip"), ResponseRejected)
    assert "Content-Encoding" in str(error)


def test_five_stacked_codings_are_undone_and_ten_refused_in_one_classified_error(
        fetcher: AnyClient, server: RawServer) -> None:
    assert fetcher.fetch(Request(server.base + "/stacked-5")).body == b"<p>stacked</p>" * 100
    error = fetch_fails(fetcher, Request(server.base + "/stacked-10"), ResponseRejected)
    assert "Content-Encoding" in str(error) and "5" in str(error)


def test_a_gzip_file_body_is_kept_as_is_for_a_capped_gunzip(
        fetcher: AnyClient, server: RawServer) -> None:
    from external_interface.decode import gunzip_capped

    body = fetcher.fetch(Request(server.base + "/zip-file")).body
    with pytest.raises(ResponseRejected):
        gunzip_capped(body, CAP)


# -- content types ----------------------------------------------------------------
@pytest.mark.parametrize(("path", "accept"), [
    ("/video", HTML_TYPES), ("/octet", HTML_TYPES), ("/video", ("text/*",)),
])
def test_an_unwanted_content_type_is_refused_after_the_headers_unread(
        fetcher: AnyClient, server: RawServer, path: str, accept: tuple[str, ...]) -> None:
    error = fetch_fails(fetcher, Request(server.base + path, accept_types=accept),
                        ResponseRejected)
    assert "content type" in str(error)
    assert server.finished[path].wait(5)
    assert server.sent[path] < 16 * MB  # only what socket buffers took before the close


@pytest.mark.parametrize(("path", "accept"), [
    ("/ok", HTML_TYPES), ("/ok", ("text/*",)), ("/ok", ("*/*",)), ("/no-type", HTML_TYPES),
])
def test_a_wanted_or_undeclared_content_type_is_read(
        fetcher: AnyClient, server: RawServer, path: str, accept: tuple[str, ...]) -> None:
    assert fetcher.fetch(Request(server.base + path, accept_types=accept)).status == 200
