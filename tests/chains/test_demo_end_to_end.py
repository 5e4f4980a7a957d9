"""The demo chain on real worker processes: exact completion, kills, redelivery, bad params."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chains.demo import demo as declared_demo
from chains.runtime.dispatch import Publisher
from chains.runtime.job import Job
from chains.runtime.model import Chain, Link, Step
from chains.runtime.preflight import LaunchRefused
from chains.runtime.units import make_unit
from sandbox.cluster import Cluster, running_cluster
from sandbox.server import Faults
from sandbox.world import Shape, World, expected_keys
from tests.chains.recrawl_support import without_recrawl

pytestmark = pytest.mark.integration

demo = without_recrawl(declared_demo)  # these tests relaunch the same crawl
BIG = World(seed=11, shape=Shape(users=80, articles=500, reposts=150))


def assert_matches_world(status: dict[str, Any], world: World) -> None:
    """Ledger counts equal the graph the sandbox's data implies, step by step."""
    assert status["state"] == "finished"
    assert status["pending"] == 0
    for step, want in world.expected().items():
        got = status["steps"][step]
        assert (got["spawned"], got["done"], got["items"]) == (want["units"], want["units"],
                                                               want["items"]), step
        assert got["failed"] == 0, status["failures"]


def assert_items_stored_once(cluster: Cluster, world: World) -> None:
    stored = cluster.stored_keys()
    for collection, keys in expected_keys(world).items():
        assert sorted(stored[collection]) == sorted(keys), collection


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("demo"), BIG, workers=1) as running:
        yield running


def test_fan_out_job_of_over_a_thousand_units_finishes_with_the_sandbox_graph(
        cluster: Cluster) -> None:
    assert sum(s["units"] for s in BIG.expected().values()) >= 1000
    status = cluster.launch(demo, page=1).wait(timeout=240)
    assert_matches_world(status, BIG)
    assert_items_stored_once(cluster, BIG)


def test_unit_delivered_twice_is_counted_once(cluster: Cluster) -> None:
    small = World(seed=11, shape=Shape(users=80, articles=500, reposts=150))
    res = cluster.runtime
    job_id = "twice-" + random.randbytes(4).hex()
    res.ledger.create_job(job_id, demo.model_dump(mode="json"), {"page": 1})
    publisher = Publisher(res.dispatch, res.ledger)
    root = make_unit("feed", {"page": 1})
    publisher.spawn(demo, job_id, {"feed": [root]}, depth=0)
    publisher.publish(demo, job_id, "feed", [root], depth=0)  # the same message again
    from chains.runtime.job import Job

    status = Job(job_id, res.ledger).wait(timeout=240)
    assert_matches_world(status, small)


def past_the_launch_checks(cluster: Cluster, chain: Chain, **params: Any) -> Job:
    """A job whose start unit reaches a worker as given, as a unit a link makes does: the
    launch refuses such a start (``preflight``), the worker must still judge it."""
    from chains.runtime import registry
    from chains.runtime.checks import resolve
    from chains.runtime.launch import root_units, worker_queues

    rt, job_id = cluster.runtime, f"unchecked-{random.getrandbits(32):08x}"
    resolved = resolve(chain, registry.steps(), worker_queues())
    settings = {"demo": registry.site("demo").read_settings(
        None, **cluster.site_settings["demo"]).model_dump(mode="json")}
    rt.ledger.create_job(job_id, resolved.model_dump(mode="json"), params, settings)
    Publisher(rt.dispatch, rt.ledger).spawn(resolved, job_id,
                                            root_units(resolved, params, {}), depth=0)
    return Job(job_id, rt.ledger, rt.dispatch)


def test_invalid_params_fail_the_unit_naming_the_field_without_retry(cluster: Cluster) -> None:
    with pytest.raises(LaunchRefused, match="page: Input should be a valid integer"):
        cluster.launch(demo, page="not-a-number")  # refused at launch, nothing queued
    status = past_the_launch_checks(cluster, demo, page="not-a-number").wait(timeout=60)
    assert status["state"] == "finished_with_failures"
    feed = status["steps"]["feed"]
    assert (feed["failed"], feed["retried"], feed["done"]) == (1, 0, 0)
    [failure] = status["failures"]
    assert failure["reason"].startswith("InvalidParams")
    assert "page" in failure["reason"] and "not-a-number" in failure["reason"]


def assert_a_killed_worker_loses_nothing(cluster: Cluster) -> None:
    """SIGKILL the only worker's process group 300 units into the job, start another: the
    job finishes with the sandbox's graph and every item stored once."""
    job = cluster.launch(demo, page=1)
    cluster.wait_for(lambda: job.status()["totals"]["done"] >= 300, 120, "300 units done")
    cluster.kill_worker(cluster.workers[0])
    assert job.status()["state"] == "running"
    cluster.start_worker()
    status = job.wait(timeout=240)
    assert_matches_world(status, BIG)
    assert_items_stored_once(cluster, BIG)


def test_job_with_one_worker_killed_mid_run_finishes_with_identical_items(
        tmp_path: Path) -> None:
    with running_cluster(tmp_path, BIG, workers=1) as cluster:
        assert_a_killed_worker_loses_nothing(cluster)


def test_transient_server_errors_are_retried_until_the_same_items_are_stored(
        tmp_path: Path) -> None:
    world = World(seed=3)
    with running_cluster(tmp_path, world, faults=Faults(fail_first=2)) as cluster:
        status = cluster.launch(demo, page=1).wait(timeout=240)
        assert_matches_world(status, world)
        assert status["totals"]["retried"] >= sum(s["units"] for s in world.expected().values())
        assert_items_stored_once(cluster, world)


def test_permanent_failures_are_listed_with_their_reason_and_the_job_still_finishes(
        tmp_path: Path) -> None:
    world = World(seed=3)
    authors = sorted({a.author_id for a in world.articles.values()})
    missing = frozenset(authors[:3])
    with running_cluster(tmp_path, world, faults=Faults(missing_users=missing)) as cluster:
        status = cluster.launch(demo, page=1).wait(timeout=240)
    assert status["state"] == "finished_with_failures"
    info = status["steps"]["user_info"]
    assert (info["failed"], info["done"], info["retried"]) == (3, len(authors) - 3, 0)
    assert {f["params"]["user_id"] for f in status["failures"]} == missing
    assert all(f["reason"].startswith("NotFound") for f in status["failures"])
    for failure in status["failures"]:  # a dead letter says what, why, how often and when
        assert failure["error"] == "NotFound" and failure["attempts"] >= 1
        assert 0 < failure["first_at"] <= failure["failed_at"]


def test_an_ad_hoc_chain_built_in_a_shell_runs_on_workers_that_never_imported_it(
        cluster: Cluster) -> None:
    authors = Chain(
        name="authors-only", start="feed",
        steps={"feed": Step(task="demo.h5.feed"), "user": Step(task="demo.h5.user_info",
                                                                batch_size=7)},
        links=[Link(src="feed", records="feed_entries", dst="user",
                    map={"user_id": "author_id"})],
    )
    status = cluster.launch(authors, page=1).wait(timeout=120)
    assert status["state"] == "finished"
    assert status["steps"]["user"]["done"] == BIG.expected()["user_info"]["units"]
    assert status["steps"]["feed"]["done"] == BIG.expected()["feed"]["units"]


def test_a_cancelled_job_stops_fetching_and_says_cancelled(cluster: Cluster) -> None:
    job = cluster.launch(demo, page=1)
    cluster.wait_for(lambda: job.status()["totals"]["done"] >= 100, 60, "100 units done")
    job.cancel()
    time.sleep(2)  # messages already taken finish their batch
    requests = job.status()["totals"]["requests"]
    time.sleep(2)
    status = job.status()
    assert status["state"] == "cancelled"
    assert status["totals"]["requests"] == requests
    assert status["totals"]["done"] < sum(s["units"] for s in BIG.expected().values())


def test_a_child_reached_from_two_parents_is_fetched_once(tmp_path: Path) -> None:
    world = World(seed=3)  # authors appear on several feed pages
    with running_cluster(tmp_path, world, concurrency=2) as cluster:
        status = cluster.launch(demo, page=1).wait(timeout=120)
    assert_matches_world(status, world)
    for step, counts in status["steps"].items():
        assert counts["requests"] == counts["done"], step


def test_a_unit_outside_the_allowed_domains_is_skipped_off_site_without_a_fetch(
        cluster: Cluster) -> None:
    fenced = demo.model_copy(update={"allowed_domains": ["example.com"]})
    with pytest.raises(LaunchRefused, match="outside the allowed domains"):
        cluster.launch(fenced, page=1)  # a start off the domains is refused at launch
    status = past_the_launch_checks(cluster, fenced, page=1).wait(timeout=60)
    assert status["state"] == "finished"
    totals = status["totals"]
    assert (totals["skipped"], totals["failed"], totals["requests"]) == (1, 0, 0)


def test_a_sharded_start_launches_one_job_per_shard_at_once(cluster: Cluster) -> None:
    from chains.runtime.launch import launch_many

    feed_only = Chain(name="feed-pages", start="feed", steps={"feed": Step(task="demo.h5.feed")})
    jobs = launch_many(feed_only, [{"page": 1}, {"page": 3}], runtime=cluster.runtime,
                       settings=cluster.site_settings)
    statuses = [job.wait(timeout=60) for job in jobs]
    pages = BIG.feed_pages()
    assert [s["state"] for s in statuses] == ["finished", "finished"]
    assert [s["steps"]["feed"]["done"] for s in statuses] == [pages, pages - 2]
    assert len({job.job_id for job in jobs}) == 2
