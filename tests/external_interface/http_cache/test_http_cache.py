"""The development cache against a real loopback server: replays make no request."""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from pathlib import Path

import pytest

from config import FetchSettings, HttpCacheSettings
from exceptions import NotFound
from external_interface.clients.http import HttpClient
from external_interface.clients.impersonate import ImpersonateClient
from external_interface.http import Request, Response
from external_interface.http_cache import (
    CachePolicy,
    CacheStorage,
    CachingFetcher,
)
from external_interface.http_cache.factory import caching_fetcher, http_cache_from_settings
from external_interface.http_cache.filesystem import FilesystemCache
from tests.external_interface.robots.site import Route, Site, serve

FORK = multiprocessing.get_context("fork")


@pytest.fixture
def site() -> Iterator[Site]:
    routes = {"/page": Route(body=b"<p>page</p>", headers={"Content-Type": "text/html"}),
              "/missing": Route(404, b"nope"), "/post": Route(body=b"posted")}
    with serve(routes) as served:
        yield served


def cached(directory: Path, policy: CachePolicy | None = None,
           clock: list[float] | None = None) -> CachingFetcher:
    now = clock or [1000.0]
    return CachingFetcher(HttpClient(FetchSettings()), FilesystemCache(directory), policy,
                          lambda: now[0])


def test_a_second_fetch_makes_no_request_and_returns_the_same_response(
        site: Site, tmp_path: Path) -> None:
    first = cached(tmp_path).fetch_raw(Request(f"{site.base}/page"))
    again = cached(tmp_path)  # another run: a new process would read the same files
    second = again.fetch_raw(Request(f"{site.base}/page"))
    assert site.hits["/page"] == 1  # counted at the server
    assert second == first and second.text == "<p>page</p>"
    assert (again.hits, again.misses) == (1, 0)


def test_the_key_is_the_request_fingerprint(site: Site, tmp_path: Path) -> None:
    fetcher = cached(tmp_path)
    fetcher.fetch_raw(Request(f"{site.base}/page?b=2&a=1"))
    fetcher.fetch_raw(Request(f"{site.base}/page?a=1&b=2#frag"))  # the same resource
    fetcher.fetch_raw(Request(f"{site.base}/page", params={"a": "1", "b": "2"}))
    assert site.hits["/page"] == 1
    fetcher.fetch_raw(Request(f"{site.base}/page?a=2"))
    assert site.hits["/page"] == 2


def test_each_client_replays_its_own_pages_only(site: Site, tmp_path: Path) -> None:
    """A page as ``http`` was served it is not what ``impersonate`` would have been."""
    settings = HttpCacheSettings(enabled=True, dir=str(tmp_path))
    http = caching_fetcher(settings, HttpClient(FetchSettings()), "http")
    chrome = caching_fetcher(settings, ImpersonateClient(FetchSettings()), "impersonate")
    for fetcher in (http, chrome, http, chrome):
        assert fetcher.fetch_raw(Request(f"{site.base}/page")).text == "<p>page</p>"
    assert site.hits["/page"] == 2 and (http.hits, chrome.hits) == (1, 1)
    assert (tmp_path / "impersonate").is_dir()


def test_only_success_is_cached_unless_asked(site: Site, tmp_path: Path) -> None:
    fetcher = cached(tmp_path)
    for _ in range(2):
        assert fetcher.fetch_raw(Request(f"{site.base}/missing")).status == 404
    assert site.hits["/missing"] == 2
    with pytest.raises(NotFound):
        fetcher.fetch(Request(f"{site.base}/missing"))
    asked = cached(tmp_path / "404s", CachePolicy(statuses=frozenset({404})))
    for _ in range(2):
        asked.fetch_raw(Request(f"{site.base}/missing"))
    assert site.hits["/missing"] == 4


def test_a_post_is_not_cached(site: Site, tmp_path: Path) -> None:
    fetcher = cached(tmp_path)
    for _ in range(2):
        fetcher.fetch_raw(Request(f"{site.base}/post", method="POST", data=b"x"))
    assert (fetcher.hits, fetcher.misses) == (0, 2)  # both went to the network


def test_an_entry_older_than_max_age_is_fetched_again(site: Site, tmp_path: Path) -> None:
    clock = [1000.0]
    fetcher = cached(tmp_path, CachePolicy(max_age_s=60), clock)
    fetcher.fetch_raw(Request(f"{site.base}/page"))
    clock[0] += 59
    fetcher.fetch_raw(Request(f"{site.base}/page"))
    assert site.hits["/page"] == 1
    clock[0] += 2
    fetcher.fetch_raw(Request(f"{site.base}/page"))
    assert site.hits["/page"] == 2


def test_off_by_default_and_on_by_setting(site: Site, tmp_path: Path) -> None:
    plain = HttpClient(FetchSettings())
    assert http_cache_from_settings(HttpCacheSettings(), plain) is plain
    on = http_cache_from_settings(HttpCacheSettings(enabled=True, dir=str(tmp_path)), plain)
    for _ in range(3):
        on.fetch_raw(Request(f"{site.base}/page"))
    assert site.hits["/page"] == 1
    assert len(list(tmp_path.rglob("*"))) == 2  # one directory, one entry, no temp file


def _hammer(directory: Path, body: bytes) -> None:
    storage = FilesystemCache(directory)
    for _ in range(200):
        storage.put("ab" * 16, Response("http://x/", 200, {"A": "b"}, body), 1.0)


def test_many_processes_writing_one_entry_never_leave_a_torn_one(tmp_path: Path) -> None:
    storage: CacheStorage = FilesystemCache(tmp_path)
    bodies = [bytes([65 + i]) * 200_000 for i in range(3)]
    writers = [FORK.Process(target=_hammer, args=(tmp_path, body)) for body in bodies]
    for writer in writers:
        writer.start()
    seen = set()
    while any(w.is_alive() for w in writers):
        entry = storage.get("ab" * 16)
        if entry is not None:
            assert entry.response.body in bodies  # whole, never a mix
            seen.add(entry.response.body[:1])
    for writer in writers:
        writer.join(30)
        assert writer.exitcode == 0
    assert storage.get("ab" * 16) is not None
    assert not list(tmp_path.rglob("*.tmp"))
    storage.delete("ab" * 16)
    assert storage.get("ab" * 16) is None


def test_a_bad_key_is_refused_clearly(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="hex"):
        FilesystemCache(tmp_path).get("../../etc/passwd")
