"""The meter charges each phase its own CPU: a nested phase's CPU is taken off its
caller's, waiting costs nothing, and an iterator's steps are charged, not its call."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

from bench.phase_meter import PhaseMeter


def spin(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def test_nested_phases_are_charged_exclusively_and_waits_are_free() -> None:
    meter = PhaseMeter()
    inner = meter.timed("ledger", lambda: spin(0.05))

    def outer() -> None:
        spin(0.03)
        inner()
        time.sleep(0.1)  # waiting for a reply: no CPU

    meter.timed("close", outer)()
    totals = meter.totals()
    assert 0.05e9 <= totals["ledger"] < 0.07e9
    assert 0.03e9 <= totals["close"] < 0.05e9


def test_every_thread_is_counted_and_an_iterator_is_charged_by_its_steps() -> None:
    meter = PhaseMeter()

    def pages() -> Iterator[int]:
        for n in range(3):
            spin(0.01)
            yield n

    pulled = meter.timed_iter("fetch", pages)()
    assert meter.totals() == {}  # nothing ran yet
    assert list(pulled) == [0, 1, 2]
    worker = threading.Thread(target=meter.timed("fetch", lambda: spin(0.02)))
    worker.start()
    worker.join()
    assert 0.05e9 <= meter.totals()["fetch"] < 0.07e9
