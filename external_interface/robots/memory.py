"""robots.txt records in this process only (scripts, a shell, tests)."""

from __future__ import annotations

import threading
import time

from external_interface.robots import RobotsRecord


class MemoryRobotsStore:
    """A dict of records with expiry, and claims, under one lock."""

    def __init__(self) -> None:
        self._records: dict[str, tuple[float, RobotsRecord]] = {}
        self._claims: dict[str, float] = {}
        self._lock = threading.Lock()

    def get(self, origin: str) -> RobotsRecord | None:
        with self._lock:
            kept = self._records.get(origin)
            if kept is None or kept[0] <= time.monotonic():
                self._records.pop(origin, None)
                return None
            return kept[1]

    def put(self, origin: str, record: RobotsRecord, keep_s: float) -> None:
        with self._lock:
            self._records[origin] = (time.monotonic() + keep_s, record)

    def claim(self, origin: str, hold_s: float) -> bool:
        now = time.monotonic()
        with self._lock:
            if self._claims.get(origin, 0.0) > now:
                return False
            self._claims[origin] = now + hold_s
            return True

    def release(self, origin: str) -> None:
        with self._lock:
            self._claims.pop(origin, None)
