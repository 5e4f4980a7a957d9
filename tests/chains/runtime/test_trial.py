"""One step tried on one live page: its request, items and the units it would spawn,
with nothing stored and nothing sent."""

from __future__ import annotations

from chains.runtime.trial import try_step
from sandbox.forum.expected import expected
from sandbox.server import SandboxServer


def test_a_thread_page_shows_its_items_and_the_units_it_would_spawn(
        demo_sandbox: SandboxServer) -> None:
    world = demo_sandbox.site.forum.world
    want = expected(world)
    thread_id = sorted(want.records["threads"])[0]
    url = f"{demo_sandbox.base_url}/forum/t/{thread_id}"
    result = try_step("forum.web.thread", {"url": url})
    assert result["error"] is None and result["status"] == 200
    assert result["request"]["url"] == url
    [thread] = result["items"]["threads"]
    assert thread == want.records["threads"][thread_id]
    spawned = result["spawns"]["forum.thread"]
    authors = {p["author_id"] for p in result["items"]["posts"]}
    assert {u["author_id"] for u in spawned["user"]} == authors
    assert len(spawned["reactions"]) == len(result["items"]["posts"])


def test_a_missing_page_is_reported_as_the_unit_would_fail(demo_sandbox: SandboxServer) -> None:
    want = expected(demo_sandbox.site.forum.world)
    gone = next(url for url, status in want.failures.items() if status == 404)
    result = try_step("forum.web.thread", {"url": f"{demo_sandbox.base_url}{gone}"})
    assert result["status"] == 404 and result["error"].startswith("NotFound")  # 410: Gone


def test_site_settings_apply_to_the_request(demo_sandbox: SandboxServer) -> None:
    result = try_step("demo.h5.feed", {"page": 2}, {"base_url": demo_sandbox.base_url})
    assert result["request"]["url"] == f"{demo_sandbox.base_url}/h5/feed"
    assert len(result["items"]["feed_entries"]) == 10
    assert result["spawns"]["demo.feed"]["feed"] == [{"page": 3}]


def test_bad_params_are_named() -> None:
    result = try_step("demo.h5.feed", {"page": "two"})
    assert result["error"].startswith("InvalidParams") and "page" in result["error"]
