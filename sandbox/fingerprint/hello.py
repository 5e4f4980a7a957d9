"""A TLS ClientHello, read with the standard library, and its JA3, JA3N and JA4 fingerprints.

    hello = ClientHello.parse(handshake)      # the handshake message, type byte first
    hello.ja4()                                # "t13d1516h2_8daaf6152771_d8a2da3f94cd"

JA3 (Salesforce): ``version,ciphers,extensions,groups,point_formats``, decimal, GREASE
left out, MD5 of that text. Chrome has shuffled its extensions on every connection
since version 110, so its JA3 changes from one connection to the next; JA3N is JA3
with the extensions sorted, stable again. JA4 (FoxIO, ``technical_details/JA4.md``):
``t`` + TLS version + ``d``/``i`` (SNI or none) + cipher and extension counts + the
first ALPN value's first and last characters, then SHA-256 (12 hex) of the sorted
ciphers, then of the sorted extensions without SNI and ALPN, ``_``, the signature
algorithms in their order.
"""

from __future__ import annotations

import hashlib
import struct
from dataclasses import dataclass, field

SNI, GROUPS, POINT_FORMATS, SIGNATURES = 0x0000, 0x000A, 0x000B, 0x000D
ALPN, VERSIONS = 0x0010, 0x002B
_VERSIONS = {0x0304: "13", 0x0303: "12", 0x0302: "11", 0x0301: "10", 0x0300: "s3",
             0x0200: "s2", 0x0100: "s1"}


class NotAHello(ValueError):
    """The bytes are not a TLS ClientHello."""


def grease(value: int) -> bool:
    """RFC 8701's reserved values (0x0a0a, 0x1a1a, ... 0xfafa): noise a fingerprint drops."""
    return value & 0x0F0F == 0x0A0A and value >> 8 == value & 0xFF


@dataclass(frozen=True)
class ClientHello:
    """What a fingerprint reads from a ClientHello, GREASE values removed."""

    version: int  # legacy_version
    ciphers: tuple[int, ...]
    extensions: tuple[int, ...]  # in the order sent
    groups: tuple[int, ...] = ()
    point_formats: tuple[int, ...] = ()
    signatures: tuple[int, ...] = ()
    alpn: tuple[str, ...] = ()
    versions: tuple[int, ...] = ()
    server_name: str | None = None
    raw: dict[int, bytes] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def parse(cls, message: bytes) -> ClientHello:
        """From a handshake message (type 1, a 3-byte length, the body)."""
        if len(message) < 4 or message[0] != 1:
            raise NotAHello("not a ClientHello handshake message")
        reader = _Reader(message[4:4 + int.from_bytes(message[1:4], "big")])
        version = reader.u16()
        reader.take(32)  # random
        reader.take(reader.u8())  # legacy session id
        ciphers = _u16s(reader.take(reader.u16()))
        reader.take(reader.u8())  # compression methods
        extensions: dict[int, bytes] = {}
        order: list[int] = []
        if reader.left:
            block = _Reader(reader.take(reader.u16()))
            while block.left:
                kind, data = block.u16(), block.take(block.u16())
                order.append(kind)
                extensions.setdefault(kind, data)
        get = extensions.get
        return cls(version, _clean(ciphers), _clean(order),
                   groups=_clean(_u16s(_prefixed16(get(GROUPS)))),
                   point_formats=tuple(_prefixed8(get(POINT_FORMATS))),
                   signatures=_clean(_u16s(_prefixed16(get(SIGNATURES)))),
                   alpn=_alpn(get(ALPN)), versions=_clean(_u16s(_prefixed8(get(VERSIONS)))),
                   server_name=_server_name(get(SNI)), raw=extensions)

    def ja3_text(self, sort_extensions: bool = False) -> str:
        extensions = sorted(self.extensions) if sort_extensions else self.extensions
        return ",".join([str(self.version), _dashed(self.ciphers), _dashed(extensions),
                         _dashed(self.groups), _dashed(self.point_formats)])

    def ja3(self) -> str:
        return hashlib.md5(self.ja3_text().encode()).hexdigest()

    def ja3n(self) -> str:
        """JA3 with the extensions sorted: stable across Chrome's shuffles."""
        return hashlib.md5(self.ja3_text(sort_extensions=True).encode()).hexdigest()

    def ja4(self) -> str:
        version = max(self.versions) if self.versions else self.version
        alpn = self.alpn[0] if self.alpn and self.alpn[0] else ""
        head = (f"t{_VERSIONS.get(version, '00')}{'d' if SNI in self.extensions else 'i'}"
                f"{min(len(self.ciphers), 99):02d}{min(len(self.extensions), 99):02d}"
                f"{alpn[0] + alpn[-1] if alpn else '00'}")
        ciphers = ",".join(f"{c:04x}" for c in sorted(self.ciphers))
        named = ",".join(f"{e:04x}" for e in sorted(self.extensions) if e not in (SNI, ALPN))
        if self.signatures:
            named += "_" + ",".join(f"{s:04x}" for s in self.signatures)
        return f"{head}_{_sha12(ciphers)}_{_sha12(named)}"


def _prefixed8(data: bytes | None) -> bytes:
    """An extension's list behind a one-byte length (none: empty)."""
    return _Reader(data).take(data[0] + 1)[1:] if data else b""


def _prefixed16(data: bytes | None) -> bytes:
    """An extension's list behind a two-byte length (none: empty)."""
    return _Reader(data).prefixed16() if data else b""


def _alpn(data: bytes | None) -> tuple[str, ...]:
    names, protocols = _Reader(_prefixed16(data)), []
    while names.left:
        protocols.append(names.take(names.u8()).decode("latin-1"))
    return tuple(protocols)


def _server_name(data: bytes | None) -> str | None:
    entries = _Reader(_prefixed16(data))
    if entries.left < 3 or entries.u8() != 0:  # 0: a host name
        return None
    return entries.take(entries.u16()).decode("latin-1")


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    @property
    def left(self) -> int:
        return len(self.data) - self.at

    def take(self, size: int) -> bytes:
        if size > self.left:
            raise NotAHello("the ClientHello ends early")
        piece = self.data[self.at:self.at + size]
        self.at += size
        return piece

    def u8(self) -> int:
        return self.take(1)[0]

    def u16(self) -> int:
        value: int = struct.unpack(">H", self.take(2))[0]
        return value

    def prefixed16(self) -> bytes:
        return self.take(self.u16())


def _u16s(data: bytes) -> tuple[int, ...]:
    return struct.unpack(f">{len(data) // 2}H", data[:len(data) // 2 * 2])


def _clean(values: tuple[int, ...] | list[int]) -> tuple[int, ...]:
    return tuple(v for v in values if not grease(v))


def _dashed(values: tuple[int, ...] | list[int]) -> str:
    return "-".join(str(v) for v in values)


def _sha12(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12] if text else "0" * 12
