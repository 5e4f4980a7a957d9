"""The close phase's own rules: retry backoff, Retry-After winning over it, and what it
leaves to the observers of a batch."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

from chains.runtime.context import Runtime
from chains.runtime.extensions import BatchClosed, Observer, UnitClosed
from chains.runtime.model import Chain, Step
from chains.runtime.observers import announce
from chains.runtime.pipeline import close as close_module
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


def test_close_leaves_metrics_throttle_pools_and_captcha_to_its_observers(
        runtime: Runtime) -> None:
    """The side concerns hear the close as observers do; the close imports none of them."""
    tree = ast.parse(Path(close_module.__file__ or "").read_text())
    imported = {node.module for node in ast.walk(tree)
                if isinstance(node, ast.ImportFrom) and node.module}
    side = {"chains.runtime.metrics", "chains.runtime.launch", "chains.runtime.registry",
            "external_interface.politeness", "external_interface.captcha"}
    assert not {m for m in imported if m in side or m.startswith(
        ("external_interface.politeness.", "external_interface.providers."))}
    assert [type(o).__name__ for o in runtime.observers] == [
        "MetricsFeed", "ThrottleFeedback", "PoolRefill", "RequesterCredit"]


class Hears(Observer):
    def __init__(self) -> None:
        self.batches: list[BatchClosed] = []
        self.done: list[UnitClosed] = []

    def batch_closed(self, batch: BatchClosed) -> None:
        self.batches.append(batch)

    def unit_done(self, unit: UnitClosed) -> None:
        self.done.append(unit)


class Breaks(Observer):
    def batch_closed(self, batch: BatchClosed) -> None:
        raise RuntimeError("observer bug")


def test_observers_hear_each_batch_and_a_broken_one_stops_none_of_the_others() -> None:
    hears = Hears()
    announce([Breaks(), hears], batch_of(), ended=None)
    [batch] = hears.batches
    assert [u.unit_id for u in hears.done] == ["u1"] and batch.counts == {"requests": 2}


def batch_of() -> BatchClosed:
    units = (UnitClosed("j", "feed", "demo.h5.feed", "u1", "http://a/1", "done", items=3),
             UnitClosed("j", "feed", "demo.h5.feed", "u2", "http://a/2", "retry"))
    return BatchClosed("j", "demo", "demo", "feed", "demo.h5.feed", units, {"requests": 2})
