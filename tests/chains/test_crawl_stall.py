"""A few bad URLs never stall their host: the generic crawl of the stall index
(``sandbox.hostile.stall``: 20 good pages, 20 URLs that hang, drip, loop, answer 500 or
429) on real workers, against a real server, with short timeouts. Every bad URL fails with
its reason within its own retries, every good page is stored, and the host's throttle is
cut at most once (the first 429s of distinct URLs), never by a URL failing again."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest

from chains.cluster import launch_crawl
from sandbox.cluster import running_cluster
from sandbox.hostile.stall import BAD, GOOD, stall_server
from sandbox.world import World

pytestmark = [pytest.mark.integration, pytest.mark.slow]
ENV = {"FETCH_READ_TIMEOUT_S": "1", "FETCH_DEADLINE_S": "2", "TASK_BACKOFF_BASE_S": "0.1",
       "TASK_BACKOFF_MAX_S": "0.5", "TASK_MAX_RETRIES": "3", "TASK_MAX_TIMEOUT_RETRIES": "1"}


@pytest.fixture(scope="module")
def crawled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, object]]:
    server, _ = stall_server(hold_s=6)
    with server, running_cluster(tmp_path_factory.mktemp("stall"), World(seed=3),
                                 extra_env=ENV) as cluster:
        job = launch_crawl([server.url + "/"], max_depth=1, runtime=cluster.runtime)
        status = job.wait(timeout=180)
        failures = job.status(failures=100)["failures"]
        stored = [r["key"] for r in cluster.runtime.store.read("pages", job_id=job.job_id)]
        assert cluster.runtime.throttle is not None
        throttle = cluster.runtime.throttle.state(f"crawl:{urlsplit(server.url).netloc}")
        yield {"status": status, "failures": failures, "stored": stored,
               "throttle": throttle, "paths": dict(server.tally.paths)}


def test_every_bad_url_fails_with_its_reason_and_every_good_page_is_stored(
        crawled: dict[str, object]) -> None:
    status = crawled["status"]
    assert isinstance(status, dict) and status["state"] == "finished_with_failures"
    failures = crawled["failures"]
    assert isinstance(failures, list)
    failed = {urlsplit(f["params"]["url"]).path: f["reason"] for f in failures}
    for bad in BAD:
        assert re.search(bad.reason, failed.get(bad.path, "")), (bad, failed.get(bad.path))
    stored = crawled["stored"]
    assert isinstance(stored, list)
    assert set(GOOD) <= {urlsplit(key).path for key in stored}


def test_a_url_that_timed_out_is_retried_fewer_times_than_one_that_answered_500(
        crawled: dict[str, object]) -> None:
    paths = crawled["paths"]
    assert isinstance(paths, dict)
    for bad in BAD:
        if bad.kind in ("hang", "drip"):
            assert paths[bad.path] == 2, (bad.path, paths[bad.path])  # TASK_MAX_TIMEOUT_RETRIES 1
        if bad.kind == "error":
            assert paths[bad.path] == 4, (bad.path, paths[bad.path])  # TASK_MAX_RETRIES 3


def test_urls_failing_again_never_cut_the_hosts_rate(crawled: dict[str, object]) -> None:
    """Each 429 or 500 URL answers the same at every retry (4 URLs x 4 tries each): only
    the first answer of each URL is news for the host, so the throttle counts 4 429s, not
    16, and cuts the rate at most once per distinct URL, never to its floor."""
    throttle = crawled["throttle"]
    assert isinstance(throttle, dict)
    assert throttle["rate_limited"] == 4, throttle
    assert throttle["server_errors"] <= 16, throttle  # hang, drip, loop, 500: 4 URLs each
    assert throttle["decreases"] <= 4, throttle
    assert throttle["rate_per_s"] is None or throttle["rate_per_s"] > 2, throttle


def test_the_stall_index_links_twenty_good_pages_and_twenty_bad_urls() -> None:
    assert len(GOOD) == len(BAD) == 20
    assert {bad.kind for bad in BAD} == {"hang", "drip", "loop", "error", "limited"}
