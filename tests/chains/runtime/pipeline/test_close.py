"""The close phase's own rules: retry backoff, and Retry-After winning over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chains.runtime.model import Chain, Step
from chains.runtime.pipeline.close import backoff_s
from sandbox.cluster import running_cluster
from sandbox.server import Faults
from sandbox.world import Shape, World


@pytest.mark.parametrize("base", [0.2, 1.0, 1.5])
def test_backoff_grows_with_retries_is_jittered_and_capped_for_any_base(base: float) -> None:
    for retries in range(8):
        delays = [backoff_s(base, retries, 5.0) for _ in range(200)]
        assert all(0.0 <= d <= min(5.0, base * 2 ** retries) for d in delays)
        assert len(set(delays)) > 100  # jittered, not one value


@pytest.mark.integration
def test_a_503_with_retry_after_waits_that_long_before_the_next_attempt(tmp_path: Path) -> None:
    feed_only = Chain(name="feed-once", start="feed", steps={"feed": Step(task="demo.h5.feed")})
    faults = Faults(fail_first=1, retry_after=2)  # each URL: a 503 Retry-After: 2, then 200
    world = World(seed=3, shape=Shape(articles=30))  # three feed pages, one after another
    with running_cluster(tmp_path, world, faults=faults,
                         extra_env={"TASK_BACKOFF_BASE_S": "0.1", "TASK_BACKOFF_MAX_S": "5"}
                         ) as cluster:
        status = cluster.launch(feed_only, page=1).wait(timeout=60)
        assert cluster.sandbox is not None
        hits = [h for h in cluster.sandbox.hits() if h.url.startswith("/h5/feed")]
    by_url: dict[str, list[Any]] = {}
    for hit in hits:
        by_url.setdefault(hit.url, []).append(hit)
    feed = status["steps"]["feed"]
    assert status["state"] == "finished" and feed["retried"] == feed["done"] == len(by_url)
    for first, second in by_url.values():
        assert (first.status, second.status) == (503, 200)
        assert second.arrived - first.answered >= 2.0  # the backoff alone is <= 0.1 s
