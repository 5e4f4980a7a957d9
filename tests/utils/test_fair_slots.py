"""Fetch slots granted first come, first served: a thread arriving as a slot is freed
waits behind the one already in line, and a waiter cut off by a time limit leaves the
line without taking a slot with it."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from types import FrameType

import pytest

from utils.fair_slots import FairSlots


def wait_until(check: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.001)


def test_a_freed_slot_goes_to_the_thread_in_line_not_to_one_arriving() -> None:
    slots, order = FairSlots(1), []
    slots.acquire()

    def in_line() -> None:
        with slots:
            order.append("in line")

    waiter = threading.Thread(target=in_line)
    waiter.start()
    wait_until(lambda: slots.waiting == 1)
    slots.release()
    with slots:  # arrives as the slot is freed: threading.Semaphore would let it in first
        order.append("arriving")
    waiter.join(timeout=5)
    assert order == ["in line", "arriving"]


def test_slots_beyond_the_first_are_taken_without_waiting() -> None:
    slots = FairSlots(3)
    for _ in range(3):
        slots.acquire()
    assert slots.waiting == 0
    for _ in range(3):
        slots.release()


def test_an_interrupted_waiter_leaves_the_line_and_takes_no_slot() -> None:
    slots = FairSlots(1)
    slots.acquire()

    def time_limit(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError("soft time limit")

    previous = signal.signal(signal.SIGALRM, time_limit)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.1)
        with pytest.raises(TimeoutError):
            slots.acquire()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert slots.waiting == 0
    slots.release()
    taken = threading.Event()

    def take() -> None:
        slots.acquire()
        taken.set()

    threading.Thread(target=take, daemon=True).start()
    assert taken.wait(timeout=5), "the slot went to the waiter that had left"


def test_no_slots_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one slot"):
        FairSlots(0)
