"""Recrawl decisions: pure keys and hashes, then on real workers with a real dedup store."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from chains.demo import demo
from chains.runtime.model import Chain, Step
from external_interface.dedup import RecrawlPolicy
from external_interface.http import Request
from external_interface.recrawl import items_hash, request_key
from sandbox.cluster import running_cluster
from sandbox.server import Faults
from sandbox.world import World
from sites.demo.h5 import User
from tests.chains.recrawl_support import with_policy, without_recrawl

SECONDS = {"DEDUP_STAMP_UNIT_S": "1", "DEDUP_EXPECTED_ENTRIES": "100000"}


def test_request_key_ignores_param_order_and_fragment() -> None:
    a = Request("http://127.0.0.1/x#top", params={"a": "1", "b": "2"})
    b = Request("http://127.0.0.1/x", params={"b": "2", "a": "1"})
    assert request_key(a) == request_key(b)
    assert request_key(a) != request_key(Request("http://127.0.0.1/x", params={"a": "2"}))


def test_items_hash_ignores_order_and_sees_any_field_change() -> None:
    u1 = User(id="u1", name="a", followers=1, bio="b")
    u2 = User(id="u2", name="c", followers=2, bio="d")
    assert items_hash([u1, u2]) == items_hash([u2, u1])
    assert items_hash([u1]) != items_hash([u1.model_copy(update={"followers": 3})])


@pytest.mark.integration
def test_seen_units_are_skipped_within_the_ttl_and_recrawled_after_it_unchanged(
        tmp_path: Path) -> None:
    world = World(seed=5)
    details = world.expected()["detail"]["units"]
    ttl = 8
    chain = with_policy(without_recrawl(demo), "detail", RecrawlPolicy(ttl_s=ttl))
    with running_cluster(tmp_path, world, extra_env=SECONDS) as cluster:
        started = time.time()
        first = cluster.launch(chain, page=1).wait(timeout=120)
        last_mark = time.time()
        stored = {r["key"]: r["last_seen"] for r in cluster.runtime.store.read("articles")}
        within = cluster.launch(chain, page=1).wait(timeout=120)
        assert time.time() - started < ttl, "the machine is too slow for this TTL"
        time.sleep(max(0.0, last_mark + ttl + 1.5 - time.time()))
        after = cluster.launch(chain, page=1).wait(timeout=120)
        restored = {r["key"]: r["last_seen"] for r in cluster.runtime.store.read("articles")}
    assert first["steps"]["detail"]["done"] == details
    assert within["steps"]["detail"]["skipped"] == details
    assert within["steps"]["detail"]["requests"] == 0
    # a skipped unit still leads to its children, replayed from the tree; each decides by
    # its own policy (comments have none: fetched every time)
    assert within["steps"]["comment"]["done"] == first["steps"]["comment"]["done"] > 0
    assert after["steps"]["detail"]["done"] == details
    assert after["steps"]["detail"]["unchanged"] == details
    assert after["steps"]["detail"]["items"] == 0
    assert restored == stored  # unchanged articles were not written again


@pytest.mark.integration
def test_a_unit_that_failed_after_its_fetch_is_fetched_again(tmp_path: Path) -> None:
    chain = Chain(name="one", start="detail", steps={
        "detail": Step(task="demo.app.detail", recrawl=RecrawlPolicy(ttl_s=3600))})
    with running_cluster(tmp_path, World(seed=5), faults=Faults(garbage_first=1)) as cluster:
        failed = cluster.launch(chain, article_id="a00001").wait(timeout=60)
        again = cluster.launch(chain, article_id="a00001").wait(timeout=60)
        skipped = cluster.launch(chain, article_id="a00001").wait(timeout=60)
    assert (failed["totals"]["failed"], failed["totals"]["requests"]) == (1, 1)
    assert failed["failures"][0]["reason"].startswith("ParseError")
    assert (again["totals"]["done"], again["totals"]["requests"]) == (1, 1)
    assert (skipped["totals"]["skipped"], skipped["totals"]["requests"]) == (1, 0)
