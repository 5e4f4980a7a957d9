"""The demo chain against the sandbox with every defence on stores exactly what it stores
without any, and its summary says what the defences cost."""

from __future__ import annotations

from pathlib import Path

import pytest

from chains.demo import demo
from sandbox.cluster import running_cluster
from sandbox.defences import Defences
from sandbox.exits import exit_address
from sandbox.world import World, expected_keys

pytestmark = pytest.mark.integration


def test_the_demo_gets_through_every_defence_with_the_same_items(tmp_path: Path) -> None:
    world = World(seed=5)
    defences = Defences.on(banned_exits=frozenset({exit_address(3)}), session_uses=4,
                           device_budget=30)
    with running_cluster(tmp_path, world, defences=defences) as cluster:
        status = cluster.launch(demo, page=1).wait(timeout=180)
        stored = cluster.stored_keys()
    assert status["state"] == "finished" and status["failures"] == []
    for step, want in world.expected().items():
        got = status["steps"][step]
        assert (got["done"], got["items"]) == (want["units"], want["items"]), step
    for collection, keys in expected_keys(world).items():
        assert sorted(stored[collection]) == sorted(keys), collection
    totals = status["totals"]
    assert totals["bans"] >= 1 and totals["rotations"] >= totals["bans"]  # the burnt exit
    assert totals["captcha_solves"] >= 1 and totals["cookie_refreshes"] >= 1
    assert totals["requests"] >= totals["done"] + totals["rotations"]
