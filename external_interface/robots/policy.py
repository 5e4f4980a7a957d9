"""The robots.txt policy: memory, then the shared store, then one fetch per origin.

The rules and numbers are in the package docstring (``external_interface.robots``).
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from urllib.parse import urlsplit

from protego import Protego

from config import RobotsSettings
from exceptions import CrawlError, NetworkError, ServerError
from external_interface.http import Response
from external_interface.robots import MAX_BYTES, RobotsRecord, RobotsStore, RobotsVerdict
from utils.urls import UnsupportedURL, normalize_url

log = logging.getLogger(__name__)
POLL_S = 0.05  # how often a process waiting for another's fetch looks at the store


@dataclass(frozen=True)
class _Entry:
    """A record with its parsed rules (None unless ``parsed``)."""

    record: RobotsRecord
    rules: Protego | None


class RobotsPolicy:
    """``check`` and ``sitemaps`` for any URL; thread-safe, one fetch per origin."""

    def __init__(self, store: RobotsStore, fetch: Callable[[str], Response],
                 settings: RobotsSettings, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.fetch = fetch
        self.settings = settings
        self.clock = clock
        self._memory: OrderedDict[str, _Entry] = OrderedDict()
        self._lock = threading.Lock()
        self._origin_locks: dict[str, threading.Lock] = {}
        self._origins: dict[str, str] = {}

    def check(self, url: str, user_agent: str | None = None) -> RobotsVerdict:
        """Whether ``url`` may be fetched by ``user_agent`` (the robots token, default
        ``ROBOTS_USER_AGENT``). Raises ``ValueError`` for a URL that is not http(s)."""
        if not self.settings.obey:
            return RobotsVerdict(True, None, "not-obeyed")
        entry, agent = self._entry(self._origin(url)), user_agent or self.settings.user_agent
        return self._judge(entry, url, agent, _delay(entry.rules, agent))

    def check_all(self, urls: Sequence[str],
                  user_agent: str | None = None) -> list[RobotsVerdict | None]:
        """``check`` for each of ``urls``, None for one that is not http(s): each origin's
        rules looked up once, its Crawl-delay read once (a batch's URLs share a few)."""
        if not self.settings.obey:
            return [RobotsVerdict(True, None, "not-obeyed")] * len(urls)
        agent = user_agent or self.settings.user_agent
        judged: dict[str, tuple[_Entry, float | None]] = {}
        out: list[RobotsVerdict | None] = []
        for url in urls:
            try:
                origin = self._origin(url)
            except ValueError:
                out.append(None)
                continue
            seen = judged.get(origin)
            if seen is None:
                entry = self._entry(origin)
                seen = judged[origin] = (entry, _delay(entry.rules, agent))
            out.append(self._judge(seen[0], url, agent, seen[1]))
        return out

    def _judge(self, entry: _Entry, url: str, agent: str, delay: float | None,
               ) -> RobotsVerdict:
        """The verdict of an origin's ``entry`` on ``url``; ``delay``: its rules' Crawl-delay."""
        record = entry.record
        if record.kind == "disallow":
            return RobotsVerdict(False, None, "unavailable", record.note,
                                 max(0.0, record.fresh_until - self.clock()))
        if entry.rules is None:
            return RobotsVerdict(True, None, "missing", record.note)
        if _allowed(entry.rules, url, agent):
            return RobotsVerdict(True, delay, "allowed", record.note)
        return RobotsVerdict(False, delay, "disallowed", f"robots.txt disallows it for {agent}")

    def sitemaps(self, url: str) -> list[str]:
        """The ``Sitemap:`` URLs of ``url``'s origin (fetching its robots.txt if needed)."""
        rules = self._entry(self._origin(url)).rules
        return list(rules.sitemaps) if rules is not None else []

    def _origin(self, url: str) -> str:
        """``origin_of``, remembered per raw scheme and host as written in the URL."""
        scheme, _, rest = url.partition("://")
        raw = f"{scheme}://{rest.split('/', 1)[0].split('?', 1)[0].split('#', 1)[0]}"
        origin = self._origins.get(raw)
        if origin is None:
            origin = origin_of(url)
            if len(self._origins) >= 4 * self.settings.memory_origins:
                self._origins.clear()
            self._origins[raw] = origin
        return origin

    # -- the three layers ----------------------------------------------------------
    def _entry(self, origin: str) -> _Entry:
        entry = self._remembered(origin)
        if entry is not None:
            return entry
        with self._origin_lock(origin):  # one thread of this process fetches
            entry = self._remembered(origin)
            if entry is None:
                entry = _parse(self._stored_or_fetched(origin))
                self._remember(origin, entry)
            return entry

    def _stored_or_fetched(self, origin: str) -> RobotsRecord:
        """A fresh stored record, else fetch one (after claiming the origin; a process
        that cannot claim it waits for the claimant's record, then fetches itself)."""
        stored = self.store.get(origin)
        if stored is not None and stored.fresh_until > self.clock():
            return stored
        hold = self.settings.claim_wait_s
        if not self.store.claim(origin, hold):
            waited = 0.0
            while waited < hold:
                time.sleep(POLL_S)
                waited += POLL_S
                found = self.store.get(origin)
                if found is not None and found.fresh_until > self.clock():
                    return found
        try:
            record = self._fetch(origin, stored)
            keep = max(record.fresh_until - self.clock(), 0.0) + self.settings.keep_stale_s
            self.store.put(origin, record, keep)
            return record
        finally:
            self.store.release(origin)

    def _remembered(self, origin: str) -> _Entry | None:
        with self._lock:
            entry = self._memory.get(origin)
            if entry is None:
                return None
            if entry.record.fresh_until <= self.clock():
                del self._memory[origin]
                return None
            self._memory.move_to_end(origin)
            return entry

    def _remember(self, origin: str, entry: _Entry) -> None:
        with self._lock:
            self._memory[origin] = entry
            while len(self._memory) > self.settings.memory_origins:
                self._memory.popitem(last=False)

    def _origin_lock(self, origin: str) -> threading.Lock:
        with self._lock:
            if len(self._origin_locks) > 4 * self.settings.memory_origins:
                self._origin_locks.clear()  # only locks nobody holds matter less than memory
            return self._origin_locks.setdefault(origin, threading.Lock())

    # -- one fetch, judged by Google's rules -------------------------------------------
    def _fetch(self, origin: str, previous: RobotsRecord | None) -> RobotsRecord:
        now = self.clock()
        try:
            response = self.fetch(f"{origin}/robots.txt")
        except (NetworkError, ServerError) as exc:
            return self._failed(origin, previous, now, 0, f"robots.txt unreachable: {exc}")
        except CrawlError as exc:  # a redirect loop, a refused body, a guarded host
            return self._allow(now, getattr(exc, "status", None) or 0,
                               f"robots.txt unusable, all allowed: {exc}")
        status = response.status
        if 200 <= status < 300:
            return RobotsRecord("parsed", status, now, now + self.settings.cache_ttl_s,
                                body=_cut(response.body))
        if status == 429 or status >= 500:
            return self._failed(origin, previous, now, status, f"robots.txt answered {status}")
        return self._allow(now, status, f"robots.txt answered {status}, all allowed")

    def _allow(self, now: float, status: int, note: str) -> RobotsRecord:
        return RobotsRecord("allow", status, now, now + self.settings.cache_ttl_s, note)

    def _failed(self, origin: str, previous: RobotsRecord | None, now: float, status: int,
                note: str) -> RobotsRecord:
        """Disallow for a back-off; keep a recent good copy; allow once failing too long."""
        since = previous.failing_since if previous and previous.failing_since else now
        until = now + self.settings.error_backoff_s
        if previous is not None and previous.kind == "parsed" and \
                now - previous.fetched_at <= self.settings.keep_stale_s:
            return replace(previous, fresh_until=until, failing_since=since,
                           note=f"{note}; the copy from before is kept")
        if now - since >= self.settings.allow_after_s:
            return RobotsRecord("allow", status, now, until,
                                f"{note} for {now - since:.0f} s, all allowed", b"", since)
        # Once per origin and back-off for the cluster: the one line saying why its units
        # wait (a wrong base URL or a site that is down looks like this).
        log.warning("%s: %s; its URLs wait %.0f s, then it is asked again (all allowed "
                    "once it has failed for %.0f s)", origin, note,
                    self.settings.error_backoff_s, self.settings.allow_after_s)
        return RobotsRecord("disallow", status, now, until, f"{note}, all disallowed for now",
                            b"", since)


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of an http(s) URL, normalised (credentials dropped)."""
    try:
        parts = urlsplit(normalize_url(url))
    except UnsupportedURL as exc:
        raise ValueError(f"robots.txt applies to http(s) URLs only: {exc}") from None
    host = parts.netloc.rpartition("@")[2]
    return f"{parts.scheme}://{host}"


def _cut(body: bytes) -> bytes:
    """At most ``MAX_BYTES``, ending at a line break: a line cut in half could disallow
    a shorter path than the file meant."""
    if len(body) <= MAX_BYTES:
        return body
    head = body[:MAX_BYTES]
    end = max(head.rfind(b"\n"), head.rfind(b"\r"))
    return head[:end + 1] if end >= 0 else b""


def _parse(record: RobotsRecord) -> _Entry:
    """The record with its rules; a body protego cannot read allows everything."""
    if record.kind != "parsed":
        return _Entry(record, None)
    try:
        return _Entry(record, Protego.parse(record.body.decode("utf-8", errors="replace")))
    except Exception as exc:  # a parser bug must not stop a crawl: robots.txt is advisory
        log.warning("robots.txt unreadable (%s): all allowed", exc)
        return _Entry(replace(record, kind="allow", note=f"unreadable: {exc}"), None)


def _allowed(rules: Protego, url: str, agent: str) -> bool:
    try:
        return bool(rules.can_fetch(url, agent))
    except Exception:  # same reasoning as in _parse
        return True


def _delay(rules: Protego | None, agent: str) -> float | None:
    """``Crawl-delay``, or ``Request-rate`` as seconds per request: the larger (None
    without rules)."""
    if rules is None:
        return None
    delays = []
    try:
        if (delay := rules.crawl_delay(agent)) is not None:
            delays.append(float(delay))
        if (rate := rules.request_rate(agent)) is not None and rate.requests:
            delays.append(rate.seconds / rate.requests)
    except (TypeError, ValueError, ZeroDivisionError):
        return None
    positive = [d for d in delays if d > 0]
    return max(positive) if positive else None
