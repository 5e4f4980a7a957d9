"""JA3, JA3N and JA4 of a ClientHello, against the JA4 specification's own example."""

from __future__ import annotations

import struct

import pytest

from sandbox.fingerprint.hello import ClientHello, NotAHello, grease

GREASE = 0x3A3A
CIPHERS = [GREASE, 0x1301, 0x1302, 0x1303, 0xC02B, 0xC02F, 0xC02C, 0xC030, 0xCCA9, 0xCCA8,
           0xC013, 0xC014, 0x009C, 0x009D, 0x002F, 0x0035]
SIGNATURES = [0x0403, 0x0804, 0x0401, 0x0503, 0x0805, 0x0501, 0x0806, 0x0601]


def u16s(values: list[int]) -> bytes:
    return struct.pack(f">{len(values)}H", *values)


def prefixed16(data: bytes) -> bytes:
    return struct.pack(">H", len(data)) + data


def spec_example() -> bytes:
    """The hello of the JA4 specification's example: 15 ciphers, 16 extensions in this
    order (``001b,0000,0033,0010,4469,...``), GREASE sprinkled in."""
    alpn = prefixed16(b"\x02h2\x08http/1.1")
    extensions = [
        (GREASE, b""), (0x001B, b"\x02\x00\x02"),
        (0x0000, prefixed16(b"\x00" + prefixed16(b"example.com"))),
        (0x0033, b""), (0x0010, alpn), (0x4469, b""), (0x0017, b""), (0x002D, b"\x01\x01"),
        (0x000D, prefixed16(u16s(SIGNATURES))), (0x0005, b""), (0x0023, b""), (0x0012, b""),
        (0x002B, b"\x06" + u16s([GREASE, 0x0304, 0x0303])), (0xFF01, b"\x00"),
        (0x000B, b"\x01\x00"), (0x000A, prefixed16(u16s([GREASE, 29, 23, 24]))),
        (0x0015, bytes(10)),
    ]
    body = (u16s([0x0303]) + bytes(32) + b"\x00" + prefixed16(u16s(CIPHERS)) + b"\x01\x00"
            + prefixed16(b"".join(u16s([kind]) + prefixed16(data) for kind, data in extensions)))
    return b"\x01" + len(body).to_bytes(3, "big") + body


def test_the_ja4_of_the_specifications_example() -> None:
    hello = ClientHello.parse(spec_example())
    assert hello.ja4() == "t13d1516h2_8daaf6152771_e5627efa2ab1"
    assert (hello.server_name, hello.alpn) == ("example.com", ("h2", "http/1.1"))


def test_ja3_keeps_the_extensions_order_and_ja3n_sorts_it() -> None:
    hello = ClientHello.parse(spec_example())
    ciphers = "4865-4866-4867-49195-49199-49196-49200-52393-52392-49171-49172-156-157-47-53"
    assert hello.ja3_text() == (f"771,{ciphers},27-0-51-16-17513-23-45-13-5-35-18-43-65281-11-"
                                "10-21,29-23-24,0")
    assert hello.ja3_text(sort_extensions=True).split(",")[2] == \
        "0-5-10-11-13-16-18-21-23-27-35-43-45-51-17513-65281"
    assert len(hello.ja3()) == len(hello.ja3n()) == 32 and hello.ja3() != hello.ja3n()


def test_grease_values_are_the_rfc_8701_ones() -> None:
    assert [v for v in range(0x10000) if grease(v)] == [0x0A0A + 0x1010 * i for i in range(16)]


@pytest.mark.parametrize("data", [b"", b"\x02\x00\x00\x00", spec_example()[:60]])
def test_anything_else_is_not_a_hello(data: bytes) -> None:
    with pytest.raises(NotAHello):
        ClientHello.parse(data)
