"""The Akamai HTTP/2 fingerprint read from a client's first frames, however they arrive."""

from __future__ import annotations

import struct

from sandbox.fingerprint.http2 import PREFACE, Http2Sniffer


def frame(kind: int, flags: int, stream: int, payload: bytes) -> bytes:
    return len(payload).to_bytes(3, "big") + bytes([kind, flags]) + \
        stream.to_bytes(4, "big") + payload


def test_chromes_first_frames_read_one_byte_at_a_time() -> None:
    settings = b"".join(struct.pack(">HI", k, v)
                        for k, v in [(1, 65536), (2, 0), (4, 6291456), (6, 262144)])
    sent = (PREFACE + frame(0x4, 0, 0, settings) + frame(0x8, 0, 0, (15663105).to_bytes(4, "big"))
            + frame(0x1, 0x25, 1, b"\x80\x00\x00\x00\xff") + frame(0x4, 0x1, 0, b""))
    sniffer = Http2Sniffer()
    for byte in sent:
        sniffer.feed(bytes([byte]))
    assert sniffer.done
    assert sniffer.fingerprint([":method", ":authority", ":scheme", ":path", "user-agent"]) == \
        "1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p"


def test_priority_frames_are_listed_and_an_absent_window_is_zero() -> None:
    sniffer = Http2Sniffer()
    sniffer.feed(PREFACE + frame(0x4, 0, 0, struct.pack(">HI", 3, 100))
                 + frame(0x2, 0, 3, b"\x00\x00\x00\x00\xc8")
                 + frame(0x2, 0, 5, b"\x80\x00\x00\x03\x64"))
    assert sniffer.fingerprint([":method", ":path"]) == "3:100|0|3:0:0:201,5:1:3:101|m,p"
