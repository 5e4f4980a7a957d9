"""What a job's views show of a failed unit: its params, their secrets masked."""

from __future__ import annotations

import time

import redis

from chains.runtime.job import Job
from chains.runtime.ledger import Failure, Ledger

SECRET_URL = "https://crawl:hunter2@shop.example/list?page=2&access_token=tok-9f2c"
SHOWN_URL = "https://crawl:***@shop.example/list?page=2&access_token=***"


def failed_job(client: redis.Redis) -> Ledger:
    ledger = Ledger(client)
    ledger.create_job("j1", {"name": "t"}, {})
    ledger.register("j1", [("u1", "page")])
    now = time.time()
    ledger.finish("j1", "u1", "page", "failed", failure=Failure(
        "u1", "page", {"url": SECRET_URL, "tags": [SECRET_URL], "depth": 2}, "NotFound",
        "HTTP 404", 1, now, now))
    return ledger


def test_the_summary_and_the_overview_show_failed_params_masked(
        redis_client: redis.Redis) -> None:
    job = Job("j1", failed_job(redis_client))
    [failure] = job.status()["failures"]
    assert failure["params"] == {"url": SHOWN_URL, "tags": [SHOWN_URL], "depth": 2}
    [group] = job.overview()["failure_groups"]
    assert group["examples"][0]["params"]["url"] == SHOWN_URL
    assert "hunter2" not in repr(job.status()) + repr(job.overview())
    assert "tok-9f2c" not in repr(job.status()) + repr(job.overview())


def test_the_ledger_keeps_the_params_as_given_to_run_the_unit_again(
        redis_client: redis.Redis) -> None:
    [failure] = failed_job(redis_client).failures("j1")
    assert failure.params["url"] == SECRET_URL
