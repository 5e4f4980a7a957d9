"""The Akamai HTTP/2 fingerprint: what a client sends before its first request.

    SETTINGS|WINDOW_UPDATE|PRIORITY|PSEUDO_HEADER_ORDER
    1:65536;2:0;4:6291456;6:262144|15663105|0|m,a,s,p        (Chrome)

Settings as ``id:value`` in the order sent; the connection window increment (0: none);
each PRIORITY frame as ``stream:exclusive:depends_on:weight`` (0: none); the first
request's pseudo-headers by initial (Akamai's "Passive Fingerprinting of HTTP/2
Clients", Black Hat EU 2017). The frames are read here as they arrive, before the
connection (``h2``) reads them again to answer.
"""

from __future__ import annotations

import hashlib
import struct

PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
_HEADERS, _PRIORITY, _SETTINGS, _WINDOW_UPDATE = 0x1, 0x2, 0x4, 0x8
_ACK = 0x1
MAX_SNIFFED = 1 << 20  # a client that sends this much before a request is no browser


class Http2Sniffer:
    """The frames a client sends up to its first HEADERS frame."""

    def __init__(self) -> None:
        self.settings: list[tuple[int, int]] = []
        self.window = 0
        self.priorities: list[str] = []
        self.done = False
        self._buffer = b""
        self._preface = False
        self._seen = 0

    def feed(self, data: bytes) -> None:
        if self.done:
            return
        self._seen += len(data)
        self._buffer += data
        if not self._preface:
            if len(self._buffer) < len(PREFACE):
                return
            if not self._buffer.startswith(PREFACE):
                self.done = True  # not HTTP/2: nothing to read
                return
            self._preface, self._buffer = True, self._buffer[len(PREFACE):]
        while len(self._buffer) >= 9 and not self.done:
            length = int.from_bytes(self._buffer[:3], "big")
            if len(self._buffer) < 9 + length:
                break
            kind, flags = self._buffer[3], self._buffer[4]
            stream = int.from_bytes(self._buffer[5:9], "big") & 0x7FFFFFFF
            payload, self._buffer = self._buffer[9:9 + length], self._buffer[9 + length:]
            self._frame(kind, flags, stream, payload)
        if self._seen > MAX_SNIFFED:
            self.done = True

    def _frame(self, kind: int, flags: int, stream: int, payload: bytes) -> None:
        if kind == _SETTINGS and not flags & _ACK and stream == 0:
            self.settings += [struct.unpack(">HI", payload[i:i + 6])
                              for i in range(0, len(payload) - 5, 6)]
        elif kind == _WINDOW_UPDATE and stream == 0 and not self.window and len(payload) >= 4:
            self.window = int.from_bytes(payload[:4], "big") & 0x7FFFFFFF
        elif kind == _PRIORITY and len(payload) >= 5:
            word = int.from_bytes(payload[:4], "big")
            self.priorities.append(f"{stream}:{word >> 31}:{word & 0x7FFFFFFF}:{payload[4] + 1}")
        elif kind == _HEADERS:
            self.done = True

    def fingerprint(self, pseudo_headers: list[str]) -> str:
        """The Akamai text, given the first request's pseudo-headers in order."""
        settings = ";".join(f"{key}:{value}" for key, value in self.settings)
        order = ",".join(name[1] for name in pseudo_headers if name.startswith(":"))
        return f"{settings}|{self.window}|{','.join(self.priorities) or '0'}|{order}"


def akamai_hash(text: str) -> str:
    return hashlib.md5(text.encode()).hexdigest()
