"""Content-Encoding undone in bounded steps, for the ``http`` client.

    decoder = decoder_for(response_headers.get("content-encoding"), cap)  # None: as sent
    size += decoder.feed(chunk, out, room)     # appends decoded pieces to ``out``
    size += decoder.finish(out, room)          # what the layers still hold at the end

A layer is a ``zlib.decompressobj`` (gzip, deflate with or without its zlib wrapper)
or brotli's ``Decompressor``, each asked for at most ``STEP`` bytes at a time; every
piece a layer gives goes straight on to the next, so a decompression bomb never
lands in memory: the last layer stops once it has given more than ``room`` bytes
(the caller refuses the body), and an inner layer that gives more than ``cap`` bytes
in all raises ``BodyTooLarge`` (its output is the next layer's input: a legitimate
inner layer is smaller than the page it unpacks to).

``MAX_LAYERS``: a Content-Encoding stacking more codings than this is refused
(``UndecodableBody``) before any byte is decoded. Five, as curl refuses a sixth
(``MAX_ENCODE_STACK``) and urllib3 2.5 does too; browsers decode one or two, and no
server has a reason for more. A coding that is not decoded here (zstd, compress)
leaves the whole body as it was sent, as ``Accept-Encoding`` never asked for it.
"""

from __future__ import annotations

import zlib

import brotli

MAX_LAYERS = 5
STEP = 64 * 1024
ACCEPT_ENCODING = "gzip, deflate, br"  # what is decoded here: the http client's default
_GZIP_MAGIC = b"\x1f\x8b"


class UndecodableBody(ValueError):
    """The body is not what its Content-Encoding says, or it says too many layers."""


class BodyTooLarge(Exception):
    """An inner layer gave more than the cap: the body is refused as over the cap."""


class _Gzip:
    """gzip (RFC 1952), member after member as ``gzip.decompress`` reads them; bytes
    after a member that start no new one are ignored, as browsers ignore them."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        self._between: bytes | None = None  # after a member's end: what came after it
        self._ignoring = False

    @property
    def pending(self) -> bool:
        if self._between is None:
            return bool(self._inflate.unconsumed_tail)
        return len(self._between) >= 2 and not self._ignoring  # a next member in hand

    def step(self, data: bytes, limit: int) -> bytes:
        if self._ignoring:
            return b""
        if self._between is not None:
            self._between += data
            if len(self._between) < 2:
                return b""
            if self._between[:2] != _GZIP_MAGIC:
                self._ignoring = True
                return b""
            data, self._between = self._between, None
            self._inflate = zlib.decompressobj(zlib.MAX_WBITS | 16)
        inflate = self._inflate
        out = inflate.decompress(data or inflate.unconsumed_tail, limit)
        if inflate.eof:
            self._between = inflate.unused_data
        return out

    def flush(self) -> bytes:
        return self._inflate.flush() if self._between is None else b""


class _Deflate:
    """deflate: RFC 9110 says zlib-wrapped (RFC 1950), and some servers send the raw
    stream (RFC 1951); the first two bytes tell which, as browsers tell."""

    def __init__(self) -> None:
        self._inflate = zlib.decompressobj(-zlib.MAX_WBITS)
        self._head: bytes | None = b""  # the first bytes, until there are two (then None)

    @property
    def pending(self) -> bool:
        return bool(self._inflate.unconsumed_tail)

    def step(self, data: bytes, limit: int) -> bytes:
        if self._head is not None:
            self._head += data
            if len(self._head) < 2:
                return b""
            first, second = self._head[0], self._head[1]
            if first & 0x0F == 8 and (first << 8 | second) % 31 == 0:
                self._inflate = zlib.decompressobj(zlib.MAX_WBITS)
            data, self._head = self._head, None
        return self._inflate.decompress(data or self._inflate.unconsumed_tail, limit)

    def flush(self) -> bytes:
        if self._head:
            raise zlib.error("a deflate body of one byte")
        return self._inflate.flush() if not self._inflate.eof else b""


class _Brotli:
    """br (RFC 7932), brotli's own bounded output (``output_buffer_limit``): it takes new
    input only once it has given all it holds, which ``Decoder`` ensures."""

    def __init__(self) -> None:
        self._decompressor = brotli.Decompressor()

    @property
    def pending(self) -> bool:
        return not self._decompressor.can_accept_more_data()

    def step(self, data: bytes, limit: int) -> bytes:
        out: bytes = self._decompressor.process(data, output_buffer_limit=limit)
        return out

    def flush(self) -> bytes:
        return b""


_Layer = _Gzip | _Deflate | _Brotli
_LAYERS: dict[str, type[_Gzip] | type[_Deflate] | type[_Brotli]] = {
    "gzip": _Gzip, "x-gzip": _Gzip, "deflate": _Deflate, "br": _Brotli}


class Decoder:
    """A body's Content-Encoding layers, undone last-applied first."""

    def __init__(self, codings: list[str], cap: int) -> None:
        self.layers: list[_Layer] = [_LAYERS[c]() for c in reversed(codings)]
        self.made = [0] * len(self.layers)
        self.cap = cap

    def feed(self, data: bytes, out: list[bytes], room: int) -> int:
        """Decode ``data`` into ``out``; returns the bytes added, stopping once past ``room``.
        Raises ``UndecodableBody`` or ``BodyTooLarge``."""
        return self._push(0, data, out, room)

    def finish(self, out: list[bytes], room: int) -> int:
        """What the layers still hold once the body has ended, into ``out``."""
        added = 0
        for index, layer in enumerate(self.layers):
            try:
                tail = layer.flush()
            except (zlib.error, brotli.error) as exc:
                raise UndecodableBody(f"{type(exc).__name__}: {exc}") from None
            if tail:
                added += self._pass_on(index, tail, out, room - added)
                if added > room:
                    break
        return added

    def _push(self, index: int, data: bytes, out: list[bytes], room: int) -> int:
        """Feed ``data`` to layer ``index`` and everything it gives to the layers after."""
        layer, added = self.layers[index], 0
        last = index + 1 == len(self.layers)
        while True:
            want = min(STEP, room - added + 1) if last else STEP
            try:
                piece = layer.step(data, want)
            except (zlib.error, brotli.error) as exc:
                raise UndecodableBody(f"{type(exc).__name__}: {exc}") from None
            data = b""
            if piece:
                added += self._pass_on(index, piece, out, room - added)
                if added > room:
                    return added
            if not layer.pending:
                return added

    def _pass_on(self, index: int, piece: bytes, out: list[bytes], room: int) -> int:
        """Layer ``index``'s output: the body's decoded bytes, or the next layer's input."""
        self.made[index] += len(piece)
        if index + 1 == len(self.layers):
            out.append(piece)
            return len(piece)
        if self.made[index] > self.cap:
            raise BodyTooLarge(f"layer {index + 1} of {len(self.layers)} gave more than "
                               f"{self.cap} bytes")
        return self._push(index + 1, piece, out, room)


def decoder_for(encoding: str | None, cap: int) -> Decoder | None:
    """The decoder for a Content-Encoding header, None when the body is kept as sent (no
    coding, identity only, or a coding not decoded here). ``UndecodableBody`` for more
    than ``MAX_LAYERS`` codings."""
    if not encoding:
        return None
    codings = [c for c in (part.strip().lower() for part in encoding.split(","))
               if c and c != "identity"]
    if len(codings) > MAX_LAYERS:
        raise UndecodableBody(f"Content-Encoding stacks {len(codings)} codings; at most "
                              f"{MAX_LAYERS} are undone")
    if not codings or not all(c in _LAYERS for c in codings):
        return None
    return Decoder(codings, cap)
