"""The expected dataset is what the pages say: a walk of the served site reads exactly it."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from sandbox.forum.expected import COLLECTIONS, expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import ForumWorld
from sandbox.server import SandboxServer, Site, url_key
from sandbox.world import World
from tests.sandbox.forum.reading import Walk, walk


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    running = SandboxServer(Site(World(), forum=ForumSite(ForumWorld.build(seed=11))))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


@pytest.fixture(scope="module")
def walked(server: SandboxServer) -> Walk:
    return walk(server.base_url)


def test_a_walk_of_the_served_forum_reads_every_expected_record_field_for_field(
        server: SandboxServer, walked: Walk) -> None:
    truth = expected(server.site.forum.world)
    for name in COLLECTIONS:
        assert walked.records[name] == truth.records[name], name


def test_the_listed_dead_threads_are_the_only_failures(server: SandboxServer,
                                                       walked: Walk) -> None:
    truth = expected(server.site.forum.world)
    assert walked.failures == truth.failures
    assert sorted(truth.failures.values()) == [404, 404, 410, 410]


def test_a_minimal_crawl_asks_every_expected_url_once_and_the_server_counts_no_duplicate(
        server: SandboxServer, walked: Walk) -> None:
    truth = expected(server.site.forum.world)
    assert sorted(walked.asked) == sorted(truth.urls) and truth.requests == len(walked.asked)
    asked = server.fetch_counts("/forum/")
    assert set(asked) == {_key(u) for u in truth.urls}
    assert server.duplicates("/forum/") == {}


def test_a_url_asked_twice_is_counted_as_a_duplicate(server: SandboxServer) -> None:
    walk_again = walk(server.base_url)
    assert len(server.duplicates("/forum/")) == len(walk_again.asked)


def test_the_demo_site_is_still_served_beside_the_forum(server: SandboxServer) -> None:
    status, _, _ = server.site.handle("/h5/feed", {"page": "1"})
    assert status == 200


def _key(url: str) -> str:
    parts = urlsplit(url)
    return url_key(parts.path, {k: v[0] for k, v in parse_qs(parts.query).items()})
