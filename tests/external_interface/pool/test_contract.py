"""The Pool contract, run against every backend: Redis (shared) and memory (one process).

Times are passed in (``now``), so rests and retirements are checked without sleeping.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from external_interface.pool import Empty, Health, Lease, Pool, Verdict
from external_interface.pool.factory import pool_factory

T0 = 1_700_000_000.0


@pytest.fixture(params=["redis", "memory"])
def pool(request: pytest.FixtureRequest) -> Iterator[Pool]:
    client = request.getfixturevalue("redis_client") if request.param == "redis" else None
    yield pool_factory(request.param, client, Health())("proxy", "test")


def leased(pool: Pool, now: float = T0, avoid: tuple[str, ...] = ()) -> Lease:
    got = pool.lease(avoid, now=now)
    assert isinstance(got, Lease), got
    return got


def test_the_backends_satisfy_the_protocol(pool: Pool) -> None:
    assert isinstance(pool, Pool)


def test_an_empty_pool_says_nothing_will_come(pool: Pool) -> None:
    assert pool.lease(now=T0) == Empty(None)


def test_leases_go_round_the_pool_least_recently_used_first(pool: Pool) -> None:
    assert pool.add({"a": "va", "b": "vb", "c": "vc"}, now=T0) == 3
    order = [leased(pool, T0 + i).member for i in range(6)]
    assert order == ["a", "b", "c", "a", "b", "c"]
    assert leased(pool, T0 + 7) == Lease("a", "va", 3)


def test_adding_a_known_member_changes_its_value_but_not_its_turn(pool: Pool) -> None:
    pool.add({"a": "old", "b": "vb"}, now=T0)
    assert leased(pool, T0 + 1).member == "a"
    assert pool.add({"a": "new"}, now=T0 + 2) == 0
    assert leased(pool, T0 + 3).member == "b"
    assert leased(pool, T0 + 4) == Lease("a", "new", 2)


def test_an_avoided_member_is_never_handed_out(pool: Pool) -> None:
    pool.add({"a": "va", "b": "vb"}, now=T0)
    assert {leased(pool, T0 + i, avoid=("a",)).member for i in range(4)} == {"b"}
    assert pool.lease(("a", "b"), now=T0 + 5) == Empty(None)


def test_a_banned_member_rests_and_the_pool_says_when_it_is_back(pool: Pool) -> None:
    pool.add({"a": "va"}, now=T0)
    assert pool.report(leased(pool).member, Verdict.BANNED, cooldown_s=30, now=T0) == "cooling"
    waiting = pool.lease(now=T0 + 10)
    assert isinstance(waiting, Empty) and waiting.retry_in_s == pytest.approx(20, abs=0.01)
    assert leased(pool, T0 + 31).member == "a"


def test_a_rest_never_shortens_a_longer_one(pool: Pool) -> None:
    pool.add({"a": "va"}, now=T0)
    pool.report("a", Verdict.BANNED, cooldown_s=60, now=T0)
    pool.report("a", Verdict.COOL, cooldown_s=1, now=T0)
    assert isinstance(pool.lease(now=T0 + 30), Empty)


def test_three_bans_without_success_retire_a_member_for_good(pool: Pool) -> None:
    pool.add({"a": "va", "b": "vb"}, now=T0)
    outcomes = [pool.report("a", Verdict.BANNED, cooldown_s=1, now=T0 + i) for i in range(3)]
    assert outcomes == ["cooling", "cooling", "retired"]
    assert pool.add({"a": "va"}, now=T0 + 5) == 0  # a source listing it again changes nothing
    assert {leased(pool, T0 + 10 + i).member for i in range(3)} == {"b"}
    assert pool.report("a", Verdict.OK, now=T0 + 20) == "gone"


def test_successes_earn_back_what_a_ban_cost(pool: Pool) -> None:
    pool.add({"a": "va"}, now=T0)
    for i in range(2):
        pool.report("a", Verdict.BANNED, now=T0 + i)
    for i in range(8):
        pool.report("a", Verdict.OK, now=T0 + 2 + i)
    assert pool.report("a", Verdict.BANNED, now=T0 + 20) == "ok"  # 1 - .68 + .4 - .34 > 0


def test_retire_removes_a_member_at_once(pool: Pool) -> None:
    pool.add({"a": "va", "b": "vb"}, now=T0)
    assert pool.report("b", Verdict.RETIRE, now=T0) == "retired"
    stats = pool.stats(now=T0)
    assert (stats.ready, stats.cooling, stats.retired) == (1, 0, 1)


def test_stats_count_ready_resting_and_retired_members(pool: Pool) -> None:
    pool.add({"a": "va", "b": "vb", "c": "vc"}, now=T0)
    pool.report("a", Verdict.COOL, cooldown_s=5, now=T0)
    pool.report("c", Verdict.RETIRE, now=T0)
    stats = pool.stats(now=T0 + 1)
    assert (stats.ready, stats.cooling, stats.retired, stats.live) == (1, 1, 1, 2)
    assert leased(pool, T0 + 1).ready == 1


def test_two_clients_of_one_redis_pool_share_its_bans(redis_client: redis.Redis) -> None:
    mine, theirs = (pool_factory("redis", redis_client)("proxy", "shared") for _ in range(2))
    mine.add({"a": "va", "b": "vb"}, now=T0)
    mine.report("a", Verdict.BANNED, cooldown_s=60, now=T0)
    assert {leased(theirs, T0 + 1 + i).member for i in range(3)} == {"b"}


def test_keep_only_forgets_the_members_a_source_stopped_listing(pool: Pool) -> None:
    pool.add({"a": "va", "b": "vb", "c": "vc"}, now=T0)
    pool.report("c", Verdict.RETIRE, now=T0)
    assert pool.keep_only(["b", "z"]) == 1
    assert {leased(pool, T0 + i).member for i in range(3)} == {"b"}
    assert pool.stats(now=T0 + 5).retired == 1  # retired ids stay remembered
    assert pool.add({"a": "va"}, now=T0 + 6) == 1  # a forgotten one may come back
