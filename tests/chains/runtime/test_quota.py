"""A job's cap on a step's units: exact, whatever is retried or runs at once."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import redis

from chains.runtime.quota import Quota


def test_a_job_admits_at_most_cap_units_and_an_admitted_unit_stays_admitted(
        redis_client: redis.Redis) -> None:
    quota = Quota(redis_client)
    assert quota.claim("j", "page", 2, ["a", "b", "c"]) == [True, True, False]
    assert quota.claim("j", "page", 2, ["c", "b", "a"]) == [False, True, True]  # retries
    assert quota.admitted("j", "page") == 2


def test_each_job_and_step_counts_on_its_own(redis_client: redis.Redis) -> None:
    quota = Quota(redis_client)
    assert quota.claim("j", "page", 1, ["a"]) == [True]
    assert quota.claim("k", "page", 1, ["b"]) == [True]
    assert quota.claim("j", "sitemap", 1, ["c"]) == [True]
    assert quota.claim("j", "page", 1, ["d"]) == [False]


def test_workers_claiming_at_once_never_pass_the_cap(redis_client: redis.Redis) -> None:
    quota = Quota(redis_client)
    batches = [[f"u{b}-{i}" for i in range(10)] for b in range(20)]
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda ids: quota.claim("j", "page", 37, ids), batches))
    assert sum(flag for answer in answers for flag in answer) == 37
    assert quota.admitted("j", "page") == 37
