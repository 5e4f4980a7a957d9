"""A writer of text (an export) turned into an HTTP body, in bounded memory.

The export writes to a file object, one record at a time, from one thread (an SQLite
cursor stays in the thread that opened it); the response reads chunks of it. Between
them sits a queue of at most ``DEPTH`` chunks of about ``CHUNK`` characters: a slow
client slows the export down instead of letting it pile up in memory, and a client
that goes away stops it at its next chunk.
"""

from __future__ import annotations

import contextlib
import io
import logging
import queue
import threading
from collections.abc import Callable, Generator
from typing import TextIO, cast

log = logging.getLogger(__name__)

CHUNK = 64 * 1024
DEPTH = 8
POLL_S = 0.5  # how often a blocked writer checks whether the reader went away
_END = object()


class Closed(Exception):
    """The reader went away: the writer stops where it is."""


class _Pipe(io.TextIOBase):
    """A text file whose writes are handed to the reader in chunks."""

    def __init__(self, chunks: queue.Queue[object], gone: threading.Event) -> None:
        self._chunks = chunks
        self._gone = gone
        self._parts: list[str] = []
        self._size = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._parts.append(text)
        self._size += len(text)
        if self._size >= CHUNK:
            self.flush()
        return len(text)

    def flush(self) -> None:
        if self._parts:
            hand(self._chunks, "".join(self._parts).encode(), self._gone)
            self._parts, self._size = [], 0


def hand(chunks: queue.Queue[object], item: object, gone: threading.Event) -> None:
    """Put ``item`` for the reader, waiting while the queue is full; ``Closed`` once the
    reader is gone."""
    while True:
        if gone.is_set():
            raise Closed
        try:
            chunks.put(item, timeout=POLL_S)
            return
        except queue.Full:
            continue


def streamed(write: Callable[[TextIO], object]) -> Generator[bytes, None, None]:
    """The bytes ``write`` writes, as they come; its error ends the stream (logged: the
    status line has gone out already)."""
    chunks: queue.Queue[object] = queue.Queue(maxsize=DEPTH)
    gone = threading.Event()

    def produce() -> None:
        pipe = _Pipe(chunks, gone)
        outcome: object = _END
        try:
            write(cast(TextIO, pipe))  # a text file as far as a writer can tell
            pipe.flush()
        except Closed:
            return
        except Exception as exc:  # the reader says the stream ended early
            log.exception("export stopped: %s", exc)
            outcome = exc
        with contextlib.suppress(Closed):
            hand(chunks, outcome, gone)

    thread = threading.Thread(target=produce, name="export", daemon=True)
    thread.start()
    try:
        while (item := chunks.get()) is not _END:
            if isinstance(item, Exception):
                return
            assert isinstance(item, bytes)
            yield item
    finally:
        gone.set()
