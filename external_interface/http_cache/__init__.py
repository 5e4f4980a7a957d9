"""A development HTTP cache: responses on local disk, replayed without the network.

    cached = CachingFetcher(fetcher, FilesystemCache(Path("run/http-cache")), CachePolicy())
    response = cached.fetch_raw(request)      # the first time fetched and stored
    response = cached.fetch_raw(request)      # then replayed: no request leaves

Off by default (``HTTP_CACHE_ENABLED``, ``--http-cache``): it is for reworking a
parser against the same pages, not for production, where the recrawl policy
decides what is fetched again. It wraps the fetcher with the same ``fetch_raw``
(and ``fetch``) method, so the runtime puts it in front of the fetcher and
nothing else changes: a job launched with ``--http-cache`` (or every job, with
``HTTP_CACHE_ENABLED=1`` on the workers) fetches its pages, its robots.txt and its
sitemaps through it.

Two interfaces, as Scrapy's ``HttpCacheMiddleware`` has them: a ``CachePolicy``
says what is stored (GET and HEAD; 2xx, and the statuses the request says its step
parses, such as a generic crawl's 404 pages, unless other statuses are asked for) and
for how long it is good; a ``CacheStorage`` keeps entries by key (the request
fingerprint of ``utils.fingerprint``: method, canonical URL, body, and the
headers the policy names). The filesystem storage is the one backend: the cache
exists for one developer's machine, and bodies do not belong in Redis.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from external_interface.http import Request, Response
from external_interface.statuses import raise_for_status
from utils.domains import AllowedDomains
from utils.fingerprint import request_fingerprint


@dataclass(frozen=True)
class CachedResponse:
    """A stored response and when it was stored (epoch seconds)."""

    response: Response
    stored_at: float


@runtime_checkable
class CacheStorage(Protocol):
    """Entries by key (a hex fingerprint). Safe for many processes at once."""

    def get(self, key: str) -> CachedResponse | None:
        """The entry, or None. Never a half-written one."""
        ...

    def put(self, key: str, response: Response, stored_at: float) -> None:
        """Store (or replace) an entry atomically: a reader sees the old or the new."""
        ...

    def delete(self, key: str) -> None:
        """Forget an entry; no error if there is none."""
        ...


@dataclass(frozen=True)
class CachePolicy:
    """What is cached and for how long.

    ``statuses``: the statuses stored; empty means every 2xx and the request's own
    ``accept_statuses`` (what its step parses as a page). ``max_age_s``: how
    long an entry is replayed (None: for ever). ``vary``: request headers that
    make two requests different entries (a language, an API version).
    """

    statuses: frozenset[int] = frozenset()
    max_age_s: float | None = None
    methods: frozenset[str] = frozenset({"GET", "HEAD"})
    vary: tuple[str, ...] = ()

    def cacheable(self, request: Request, response: Response) -> bool:
        if request.method.upper() not in self.methods:
            return False
        if self.statuses:
            return response.status in self.statuses
        return 200 <= response.status < 300 or response.status in request.accept_statuses

    def fresh(self, entry: CachedResponse, now: float) -> bool:
        return self.max_age_s is None or now - entry.stored_at <= self.max_age_s

    def key(self, request: Request) -> str:
        """The request's fingerprint, hex: what the storage files it under."""
        return request_fingerprint(request.method, request.full_url,
                                   request.data or b"", request.headers, self.vary).hex()


class FetchesRaw(Protocol):
    def fetch_raw(self, request: Request, allowed: AllowedDomains | None = None
                  ) -> Response: ...


class CachingFetcher:
    """A fetcher in front of a fetcher: replays a fresh stored response, else fetches
    and stores what the policy allows. Errors (network, caps) are never stored."""

    def __init__(self, fetcher: FetchesRaw, storage: CacheStorage,
                 policy: CachePolicy | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.fetcher = fetcher
        self.storage = storage
        self.policy = policy or CachePolicy()
        self.clock = clock
        self.hits = 0
        self.misses = 0

    def fetch_raw(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """The stored response if fresh, else the network's (stored if cacheable).
        ``allowed``: the job's domains, checked by the fetch on every hop; a stored
        response passed them when it was fetched (an off-site hop raises, and an
        error is never stored)."""
        cacheable_method = request.method.upper() in self.policy.methods
        key = self.policy.key(request) if cacheable_method else ""
        if cacheable_method:
            entry = self.storage.get(key)
            if entry is not None and self.policy.fresh(entry, self.clock()) and (
                    not allowed or allowed.allows_url(entry.response.url)):
                self.hits += 1
                return replace(entry.response, from_cache=True)
        self.misses += 1
        response = self.fetcher.fetch_raw(request, allowed)
        if self.policy.cacheable(request, response):
            self.storage.put(key, response, self.clock())
        return response

    def fetch(self, request: Request, allowed: AllowedDomains | None = None) -> Response:
        """As ``Fetcher.fetch``: the classified error for a bad status."""
        response = self.fetch_raw(request, allowed)
        raise_for_status(response)
        return response
