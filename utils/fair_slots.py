"""A counting semaphore that hands a freed slot to the thread that has waited longest.

``threading.Semaphore`` lets a thread that arrives as a slot is freed take it before
the waiter that was woken for it; that waiter goes back to the end of the line. A
thread that runs a long list of pages one after another (``Step.inline_next``) then
loses the race again and again and finishes last, long after the others: the tail of
a crawl. Here ``release`` gives the slot to the oldest waiter directly, so no one
barges in.
"""

from __future__ import annotations

import threading
from collections import deque
from types import TracebackType


class FairSlots:
    """``n`` slots, granted in the order they were asked for."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"FairSlots needs at least one slot, not {n}")
        self._free = n
        self._lock = threading.Lock()
        self._waiters: deque[threading.Lock] = deque()

    def acquire(self) -> None:
        """Take a slot, waiting behind everyone who asked first."""
        with self._lock:
            if self._free and not self._waiters:
                self._free -= 1
                return
            turn = threading.Lock()
            turn.acquire()
            self._waiters.append(turn)
        try:
            turn.acquire()  # released by ``release``: the slot is ours
        except BaseException:  # interrupted (a time limit): leave the line, or the slot
            with self._lock:
                if turn in self._waiters:
                    self._waiters.remove(turn)
                    raise
            self.release()  # it was handed over as we were interrupted: pass it on
            raise

    def release(self) -> None:
        """Give the slot to the oldest waiter, or back to the pool."""
        with self._lock:
            if self._waiters:
                self._waiters.popleft().release()
            else:
                self._free += 1

    @property
    def waiting(self) -> int:
        """Threads in line for a slot."""
        with self._lock:
            return len(self._waiters)

    def __enter__(self) -> FairSlots:
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.release()
