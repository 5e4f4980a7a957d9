"""A recrawl of the forum after it changed (issue 19), on real workers: ``forum_recrawl``
finds every change the mutation made, fetches only what its policies call volatile or
stale plus the changed pages, reports new, changed and gone per step (each gone unit
listed with its URL, in the summary and ``crawlchain export JOB_ID --gone``; every
step's outcomes adding up to its ``spawned``), and loses no record of the first crawl."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from chains.forum import forum_recrawl
from chains.runtime.ledger import OUTCOMES
from sandbox.cluster import Cluster, running_cluster
from sandbox.forum import pages
from sandbox.forum.expected import COLLECTIONS, changed_pages, diff, expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import LIVE, ForumWorld
from sandbox.world import World

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
WORLD = ForumWorld.build(seed=7)
STEPS = {"/forum/b/": "board", "/forum/t/": "thread", "/forum/api/users/": "user",
         "/forum/api/posts/": "reactions"}


def step_of(url: str) -> str:
    return next((step for prefix, step in STEPS.items() if url.startswith(prefix)), "boards")


def last_reaction_page(world: ForumWorld, post_id: int) -> str:
    chunks = world.reaction_pages(post_id)
    return pages.reactions_url(post_id, chunks[-2][-1].id if len(chunks) > 1 else None)


def volatile(before: ForumWorld, after: ForumWorld) -> set[str]:
    """What ``forum_recrawl``'s policies fetch whatever changed: the index; each board's
    first page and the page that was its last; every thread page (scores change on any
    page), dead ones too (never stored, so never fresh); and the page that was the last
    of each reached post's reactions. Users and the other pages are fresh: skipped."""
    urls = {"/forum/"}
    for board in after.boards:
        urls |= {pages.board_url(board, 1), pages.board_url(board, before.board_pages(board))}
    want = expected(after)
    urls |= {u for u in want.urls if u.startswith("/forum/t/")}
    reached = [p.id for t in after.listed() if t.status == LIVE for p in after.posts_of(t)]
    return urls | {last_reaction_page(before, p) for p in reached if p in before.posts}


def stored(cluster: Cluster) -> dict[str, dict[str, Any]]:
    return {c: {r["key"]: r["data"] for r in cluster.runtime.store.read(c)} for c in COLLECTIONS}


def asked(cluster: Cluster) -> Counter[str]:
    assert cluster.sandbox is not None
    return Counter({url.removesuffix("?"): n
                    for url, n in cluster.sandbox.fetch_counts("/forum/").items()})


def test_a_recrawl_finds_every_change_and_fetches_only_the_volatile_and_the_changed(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    site = ForumSite(WORLD)
    with running_cluster(tmp_path_factory.mktemp("recrawl"), World(seed=3), forum=site) as cluster:
        first = cluster.launch(forum_recrawl).wait(timeout=240)
        kept, before_asks = stored(cluster), asked(cluster)
        mutation = site.mutate()
        second = cluster.launch(forum_recrawl).wait(timeout=240)
        now, after_asks = stored(cluster), asked(cluster)
        listed = cluster.runtime.ledger.gone_units(second["job_id"])
        exported = subprocess.run(
            [sys.executable, "-m", "cli", "export", second["job_id"], "--gone", "--format",
             "json"], cwd=ROOT, env=cluster.env, capture_output=True, text=True, timeout=60,
            check=True).stdout
        assert cluster.sandbox is not None
        base = cluster.sandbox.base_url
    after = site.world
    changed = changed_pages(WORLD, after)
    fetched = after_asks - before_asks
    # 1. it fetches the volatile pages and the changed ones still served, each once
    want = volatile(WORLD, after) | {u for u, (_, status) in changed.items() if status == 200}
    assert set(fetched) == want and set(fetched.values()) == {1}, set(fetched) ^ want
    assert second["totals"]["requests"] == len(want) < first["totals"]["requests"]
    # 2. new, changed and gone per step match the mutation's pages exactly
    for field, statuses in (("new", {(404, 200)}), ("changed", {(200, 200)}),
                            ("gone", {(200, 404), (200, 410)})):
        per_step = Counter(step_of(u) for u, pair in changed.items() if pair in statuses)
        got = {s: c[field] for s, c in second["steps"].items() if c[field]}
        assert got == dict(per_step), (field, mutation)
    assert second["steps"]["thread"]["gone"] == 1  # the deleted thread, never fetched again
    # 2b. each gone unit is listed with its URL (the summary's and the export's lists), and
    # every step's outcomes add up to what it spawned, gone units included
    gone_pages = {u for u, pair in changed.items() if pair in {(200, 404), (200, 410)}}
    assert {g.url.removeprefix(base).removesuffix("?") for g in listed} == gone_pages
    assert [g["url"] for g in json.loads(exported)] == [g.url for g in listed]
    assert [g["url"] for g in second["gone_units"]] == [g.url for g in listed][:20]
    for step, counts in second["steps"].items():
        assert sum(counts[o] for o in OUTCOMES) == counts["spawned"], (step, counts)
    # 3. the dead threads (never stored) are the only failures, as in the first crawl
    assert second["state"] == first["state"] == "finished_with_failures"
    assert second["totals"]["failed"] == len(expected(after).failures)
    # 4. no record of the first crawl is lost; the new and changed ones are stored
    changes = diff(WORLD, after)
    for collection in COLLECTIONS:
        got, old = now[collection], kept[collection]
        assert set(old) <= set(got), collection
        assert set(got) - set(old) == {str(k) for k in changes[collection].new}, collection
        for key, (_, fresh) in changes[collection].changed.items():
            assert got[str(key)] == fresh, (collection, key)
