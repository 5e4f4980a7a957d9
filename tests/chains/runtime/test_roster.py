"""The workers' roster: who consumes which queue, from heartbeats in Redis."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import redis

from chains.runtime.roster import FORGET_S, STALE_S, Roster
from external_interface import keys
from sandbox.cluster import QUEUES, running_cluster
from sandbox.world import World


def test_a_beating_worker_is_live_with_its_queues_until_it_leaves(
        redis_client: redis.Redis) -> None:
    roster = Roster(redis_client)
    roster.beat("a@h", ["demo", "forum"], 11)
    roster.beat("b@h", ["forum"], 12)
    assert set(roster.live()) == {"a@h", "b@h"} and roster.live()["a@h"].pid == 11
    assert roster.consumers() == {"demo": {"a@h"}, "forum": {"a@h", "b@h"}}
    roster.leave("a@h")
    assert roster.consumers() == {"forum": {"b@h"}}


def test_a_worker_silent_past_the_stale_time_is_not_live_and_long_gone_ones_are_pruned(
        redis_client: redis.Redis) -> None:
    roster = Roster(redis_client)
    now = time.time()
    for name, age in (("stale@h", STALE_S + 1), ("gone@h", FORGET_S + 1)):
        redis_client.hset(keys.WORKERS, name, json.dumps(
            {"queues": ["demo"], "pid": 1, "at": now - age}))
    redis_client.hset(keys.WORKERS, "other-version@h", "not json")
    assert roster.live() == {} and roster.consumers() == {}
    roster.beat("new@h", ["demo"], 2)
    assert set(redis_client.hkeys(keys.WORKERS)) == {b"stale@h", b"other-version@h", b"new@h"}


@pytest.mark.slow
def test_a_real_worker_writes_its_queues_while_it_consumes_and_removes_them_as_it_stops(
        tmp_path: Path) -> None:
    with running_cluster(tmp_path, World(seed=3)) as cluster:
        cluster.wait_for_workers()
        roster = Roster(cluster.runtime.redis)
        [(name, seen)] = roster.live().items()
        assert set(seen.queues) == set(QUEUES.split(",")) and seen.pid == cluster.workers[0].pid
        cluster.kill_worker(cluster.workers[0], sig=15)  # a warm shutdown
        assert name not in roster.live()
