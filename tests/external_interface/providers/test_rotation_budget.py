"""A unit every exit is banned on fails after the rotation budget, with its reason, and the
rest of the job finishes; a banned exit is never handed back to the same unit."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.cluster import running_cluster
from sandbox.defences import Defences
from sandbox.world import World, expected_keys
from tests.external_interface.cookie.test_refill_chain import AUTHORS

pytestmark = pytest.mark.integration


def test_a_unit_banned_on_every_exit_fails_after_its_budget_and_the_job_finishes(
        tmp_path: Path) -> None:
    world = World(seed=3)
    victim = sorted({a.author_id for a in world.articles.values()})[1]
    defences = Defences(blocked_paths=frozenset({f"/h5/user/{victim}"}))  # a 200 interstitial
    env = {"RESOURCES_MAX_ROTATIONS": "2", "PROXY_BAN_COOLDOWN_S": "1"}
    with running_cluster(tmp_path, world, extra_env=env, defences=defences) as cluster:
        assert cluster.sandbox is not None
        status = cluster.launch(AUTHORS, page=1).wait(timeout=120)
        tries = [h.client for h in cluster.sandbox.hits() if h.url.startswith(
            f"/h5/user/{victim}?")]
        stored = set(cluster.stored_keys()["users"])
    assert status["state"] == "finished_with_failures"
    [failure] = status["failures"]
    assert failure["params"] == {"user_id": victim}
    assert failure["reason"].startswith("RotationsSpent: gave up after 2 rotations")
    assert "Verify you are human" in failure["reason"]
    assert len(tries) == 3 and len(set(tries)) == 3  # never the same exit twice
    info = status["steps"]["user_info"]
    assert (info["bans"], info["rotations"], info["retried"]) == (3, 2, 0)
    assert stored == expected_keys(world)["users"] - {victim}
