"""One proxy pool for the whole cluster: a ban one worker process meets, the next honours."""

from __future__ import annotations

import signal
from pathlib import Path

import pytest

from chains.runtime.model import Chain, Step
from sandbox.cluster import running_cluster
from sandbox.defences import Defences
from sandbox.exits import exit_address
from sandbox.world import World

pytestmark = pytest.mark.integration

FEED = Chain(name="feed-only", start="feed", steps={"feed": Step(task="demo.h5.feed")})
BURNT = exit_address(3)  # the cluster's fourth exit proxy: banned by the site from the start


def test_a_ban_seen_by_one_worker_process_is_honoured_by_another(tmp_path: Path) -> None:
    world = World(seed=3)
    pages = world.expected()["feed"]["units"]
    with running_cluster(tmp_path, world, extra_env={"PROXY_BAN_COOLDOWN_S": "600"},
                         defences=Defences(banned_exits=frozenset({BURNT}))) as cluster:
        assert cluster.sandbox is not None
        first = cluster.launch(FEED, page=1).wait(timeout=60)
        met = [h for h in cluster.sandbox.hits() if h.client == BURNT]
        cluster.kill_worker(cluster.workers[0], signal.SIGTERM)  # its process knew the ban
        cluster.start_worker()
        seen = len(cluster.sandbox.hits())
        second = cluster.launch(FEED, page=1).wait(timeout=60)
        later = cluster.sandbox.hits()[seen:]
    assert first["steps"]["feed"]["done"] == second["steps"]["feed"]["done"] == pages
    assert [h.status for h in met] == [403] and first["totals"]["bans"] == 1
    assert len(later) == pages and {h.status for h in later} == {200}
    assert BURNT not in {h.client for h in later}  # the new process never tried the burnt exit
    assert len({h.client for h in later}) == 3  # it went round the three others
