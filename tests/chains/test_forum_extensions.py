"""A user's item pipelines and observer on the forum chain, on real workers: what the
pipelines made of the items is what is stored, a dropped item is counted with its reason,
and the observer hears the job start, every unit end and the job end."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from chains.forum import forum
from sandbox.cluster import running_cluster
from sandbox.forum.expected import expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import ForumShape, ForumWorld
from sandbox.world import World
from tests.chains.forum_extensions import OBSERVED

pytestmark = pytest.mark.integration

WORLD = ForumWorld.build(seed=11, shape=ForumShape(boards=(25, 14, 6), users=20))


def test_a_user_pipeline_and_observer_see_the_forum_crawl(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    journal = tmp_path / "observed.jsonl"
    monkeypatch.setenv(OBSERVED, str(journal))  # the launching process hears job_started
    env = {"ITEM_PIPELINES": "tests.chains.forum_extensions:Enrich,"
                             "tests.chains.forum_extensions:NoAnger",
           "OBSERVERS": "tests.chains.forum_extensions:Journal", OBSERVED: str(journal)}
    with running_cluster(tmp_path, World(seed=3), extra_env=env,
                         forum=ForumSite(WORLD)) as cluster:
        status = cluster.launch(forum).wait(timeout=240)
        posts = {r["key"]: r["data"] for r in cluster.runtime.store.read("posts")}
        reactions = {r["key"]: r["data"] for r in cluster.runtime.store.read("reactions")}
    want = expected(WORLD).records
    angry = {k for k, r in want["reactions"].items() if r["kind"] == "angry"}
    assert angry and set(reactions) == {str(k) for k in set(want["reactions"]) - angry}
    assert status["drop_reasons"] == {"angry reaction": len(angry)}
    assert status["totals"]["dropped_items"] == len(angry)
    assert set(posts) == {str(k) for k in want["posts"]}
    assert all(p["words"] == len(p["body"].split()) for p in posts.values())
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    mine = [e for e in events if e["job"] == status["job_id"]]
    kinds = Counter(e["event"] for e in mine)
    assert kinds["job_started"] == 1
    assert [e["state"] for e in mine if e["event"] == "job_ended"] == ["finished_with_failures"]
    failed = sorted(e["url"] for e in mine if e["event"] == "unit_failed")
    assert failed == sorted(f["url"] for f in status["failures"])
    assert kinds["unit_done"] == sum(s["done"] + s["skipped"] for s in status["steps"].values())
