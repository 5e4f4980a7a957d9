"""The http client's decoder: every coding it undoes, in pieces of any size, bounded."""

from __future__ import annotations

import gzip
import zlib

import brotli
import pytest

from external_interface.clients.codings import (
    MAX_LAYERS,
    BodyTooLarge,
    UndecodableBody,
    decoder_for,
)

PAGE = b"<p>hello, crawler</p>\n" * 2000


def decoded(body: bytes, encoding: str, cap: int = 10 * len(PAGE), piece: int = 1000) -> bytes:
    """``body`` fed in ``piece``-byte chunks, as the socket would hand it over."""
    decoder = decoder_for(encoding, cap)
    assert decoder is not None
    out: list[bytes] = []
    size = 0
    for start in range(0, len(body), piece):
        size += decoder.feed(body[start:start + piece], out, cap - size)
        assert size <= cap
    decoder.finish(out, cap - size)
    return b"".join(out)


def deflated(data: bytes, wbits: int) -> bytes:
    squeezer = zlib.compressobj(6, zlib.DEFLATED, wbits)
    return squeezer.compress(data) + squeezer.flush()


@pytest.mark.parametrize("piece", [1, 7, 4096, 1 << 20])
@pytest.mark.parametrize(("encoding", "body"), [
    ("gzip", gzip.compress(PAGE)), ("x-gzip", gzip.compress(PAGE)),
    ("deflate", deflated(PAGE, zlib.MAX_WBITS)), ("deflate", deflated(PAGE, -zlib.MAX_WBITS)),
    ("br", brotli.compress(PAGE)), ("gzip, br", brotli.compress(gzip.compress(PAGE))),
    ("identity, gzip", gzip.compress(PAGE)),
])
def test_each_coding_is_undone_whatever_the_pieces(encoding: str, body: bytes, piece: int) -> None:
    assert decoded(body, encoding, piece=piece) == PAGE


def test_gzip_members_are_read_one_after_another_and_trailing_garbage_is_ignored() -> None:
    body = gzip.compress(PAGE) + gzip.compress(b"tail") + b"\0\0 not gzip"
    assert decoded(body, "gzip", piece=3) == PAGE + b"tail"


def test_as_many_layers_as_allowed_are_undone_split_anywhere() -> None:
    body = PAGE
    for _ in range(MAX_LAYERS):
        body = gzip.compress(body)
    assert decoded(body, ", ".join(["gzip"] * MAX_LAYERS), piece=5) == PAGE


def test_more_stacked_layers_than_allowed_are_refused_before_decoding() -> None:
    with pytest.raises(UndecodableBody, match="stacks 10 codings; at most 5"):
        decoder_for(", ".join(["gzip"] * 10), 1000)


@pytest.mark.parametrize("encoding", [None, "", "identity", "zstd", "gzip, zstd", "compress"])
def test_no_coding_or_one_not_decoded_here_leaves_the_body_as_sent(encoding: str | None) -> None:
    assert decoder_for(encoding, 1000) is None


@pytest.mark.parametrize(("encoding", "body"), [
    ("gzip", b"this is not gzip at all"), ("br", b"not brotli either"),
    ("deflate", b"x"), ("gzip, gzip", gzip.compress(b"one layer only")),
])
def test_a_body_that_is_not_its_coding_is_undecodable(encoding: str, body: bytes) -> None:
    with pytest.raises(UndecodableBody):
        decoded(body, encoding)


@pytest.mark.parametrize(("encoding", "body"), [
    ("gzip", gzip.compress(bytes(64 << 20))),
    ("br", brotli.compress(bytes(64 << 20), quality=5)),
])
def test_a_bomb_stops_just_past_the_room_left(encoding: str, body: bytes) -> None:
    decoder = decoder_for(encoding, 1 << 20)
    assert decoder is not None
    out: list[bytes] = []
    added = decoder.feed(body, out, 1 << 20)
    assert (1 << 20) < added <= (1 << 20) + 64 * 1024 and sum(map(len, out)) == added


def test_an_inner_layer_past_the_cap_is_too_large() -> None:
    """The gzip layer unpacks to a 1 MB deflate stream of empty blocks, which makes no page
    at all: an inner layer is bounded by the cap too, or it could churn unseen."""
    empty_blocks = b"\x00\x00\x00\xff\xff" * 200_000  # stored blocks of no bytes each
    inner = b"\x78\x9c" + empty_blocks + b"\x03\x00" + zlib.adler32(b"").to_bytes(4, "big")
    assert zlib.decompress(inner) == b""
    body = gzip.compress(inner)
    decoder = decoder_for("deflate, gzip", 64 * 1024)
    assert decoder is not None
    with pytest.raises(BodyTooLarge):
        decoder.feed(body, [], 64 * 1024)
