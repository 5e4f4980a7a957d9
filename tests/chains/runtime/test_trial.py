"""One step tried on one live page: its request, items and the units it would spawn,
with nothing stored and nothing sent."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chains.runtime.trial import try_step
from sandbox.forum.expected import expected
from sandbox.server import SandboxServer, Site
from sandbox.world import World


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    running = SandboxServer(Site(World(seed=3)))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


def test_a_thread_page_shows_its_items_and_the_units_it_would_spawn(
        server: SandboxServer) -> None:
    world = server.site.forum.world
    want = expected(world)
    thread_id = sorted(want.records["threads"])[0]
    url = f"{server.base_url}/forum/t/{thread_id}"
    result = try_step("forum.web.thread", {"url": url})
    assert result["error"] is None and result["status"] == 200
    assert result["request"]["url"] == url
    [thread] = result["items"]["threads"]
    assert thread == want.records["threads"][thread_id]
    spawned = result["spawns"]["forum.thread"]
    authors = {p["author_id"] for p in result["items"]["posts"]}
    assert {u["author_id"] for u in spawned["user"]} == authors
    assert len(spawned["reactions"]) == len(result["items"]["posts"])


def test_a_missing_page_is_reported_as_the_unit_would_fail(server: SandboxServer) -> None:
    want = expected(server.site.forum.world)
    gone = next(url for url, status in want.failures.items() if status == 404)
    result = try_step("forum.web.thread", {"url": f"{server.base_url}{gone}"})
    assert result["status"] == 404 and result["error"].startswith("NotFound")  # 410: Gone


def test_site_settings_apply_to_the_request(server: SandboxServer) -> None:
    result = try_step("demo.h5.feed", {"page": 2}, {"base_url": server.base_url})
    assert result["request"]["url"] == f"{server.base_url}/h5/feed"
    assert len(result["items"]["feed_entries"]) == 10
    assert result["spawns"]["demo.feed"]["feed"] == [{"page": 3}]


def test_bad_params_are_named() -> None:
    result = try_step("demo.h5.feed", {"page": "two"})
    assert result["error"].startswith("InvalidParams") and "page" in result["error"]
