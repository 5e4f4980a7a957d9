"""The development HTTP cache the settings name, in front of a fetcher (off: the fetcher)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from external_interface.http_cache import CachePolicy, CachingFetcher, FetchesRaw
from external_interface.http_cache.filesystem import FilesystemCache

if TYPE_CHECKING:
    from config import HttpCacheSettings


def http_cache_from_settings(settings: HttpCacheSettings, fetcher: FetchesRaw) -> FetchesRaw:
    """The fetcher itself when the cache is off (the default), else the cache over it."""
    if not settings.enabled:
        return fetcher
    return caching_fetcher(settings, fetcher)


def caching_fetcher(settings: HttpCacheSettings, fetcher: FetchesRaw,
                    client: str = "http") -> CachingFetcher:
    """The cache over ``fetcher``, whether or not the settings turn it on: the runtime
    keeps one for the jobs launched with ``--http-cache``. A fetch client other than
    ``http`` keeps its entries apart, under ``<dir>/<client>/``: a page as ``http``
    fetched it is not what ``impersonate`` would have been served. Nothing is created
    on disk before the first entry is stored."""
    policy = CachePolicy(statuses=frozenset(settings.statuses),
                         max_age_s=settings.max_age_s or None)
    directory = Path(settings.dir) if client == "http" else Path(settings.dir) / client
    return CachingFetcher(fetcher, FilesystemCache(directory), policy)
