"""An export turned into an HTTP body: all of it, in chunks, and stopped when the reader goes."""

from __future__ import annotations

import threading
from typing import TextIO

from api import stream


def test_everything_written_arrives_in_order_in_bounded_chunks() -> None:
    def write(out: TextIO) -> None:
        for n in range(50_000):
            out.write(f"line {n}\n")

    chunks = list(stream.streamed(write))
    assert b"".join(chunks).decode().splitlines() == [f"line {n}" for n in range(50_000)]
    assert len(chunks) > 1 and max(map(len, chunks)) < 2 * stream.CHUNK


def test_a_reader_that_goes_away_stops_the_writer() -> None:
    stopped = threading.Event()
    written = []

    def write(out: TextIO) -> None:
        try:
            for n in range(10_000_000):
                out.write("x" * 1000)
                written.append(n)
        finally:
            stopped.set()

    body = stream.streamed(write)
    next(body)
    body.close()  # the client hung up
    assert stopped.wait(timeout=10)
    assert len(written) < (stream.DEPTH + 3) * stream.CHUNK // 1000  # queue-bounded


def test_a_writer_that_fails_ends_the_stream_early() -> None:
    def write(out: TextIO) -> None:
        out.write("first\n")
        out.flush()
        raise RuntimeError("the store went away")

    assert b"".join(stream.streamed(write)) == b"first\n"
