"""``render="auto"``: fetch over ``http`` first and render in the browser only the pages
that need it, decided once per page pattern, as Crawlee's adaptive crawler decides per
request label, but from what the step itself finds.

    pattern("http://h/item/123?page=2")  ->  "h/item/{n}?page"

A step declared ``render="auto"`` fetches a page of an undecided pattern over ``http``.
If its parse finds something (items, a follow list, a next page), the pattern is plain
(``http`` for good). If it finds nothing, the page is rendered and parsed again: the
rendered page finding something makes the pattern ``browser`` (its later pages are
rendered straight away); finding nothing too, the page is empty either way and the
pattern stays plain. Decisions are this worker process's (a few pages per process
decide; nothing is shared in Redis), and the job's counts say how many pages each way
went (``rendered`` of ``requests``).
"""

from __future__ import annotations

import re
import threading
from urllib.parse import parse_qsl, urlsplit

PLAIN, RENDER = "http", "browser"
_NUMBER = re.compile(r"\d+")
_ID = re.compile(r"^[0-9a-f]{8,}$|^[0-9a-f-]{32,36}$", re.IGNORECASE)


def pattern(url: str) -> str:
    """The page pattern of ``url``: host, path with numbers and ids as placeholders, the
    query's names without their values."""
    parts = urlsplit(url)
    segments = ["{id}" if _ID.match(s) else _NUMBER.sub("{n}", s)
                for s in parts.path.split("/")]
    names = sorted({name for name, _ in parse_qsl(parts.query, keep_blank_values=True)})
    return f"{parts.netloc}{'/'.join(segments)}" + (f"?{'&'.join(names)}" if names else "")


class RenderChoices:
    """What this process decided for each (step, pattern): ``http`` or ``browser``."""

    def __init__(self) -> None:
        self._decided: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()

    def get(self, step: str, url: str) -> str | None:
        return self._decided.get((step, pattern(url)))

    def decide(self, step: str, url: str, choice: str) -> None:
        with self._lock:
            self._decided.setdefault((step, pattern(url)), choice)


CHOICES = RenderChoices()  # this process's; no I/O, nothing built but a dict
