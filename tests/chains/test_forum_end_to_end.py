"""The forum chain on real workers, checked against the forum's own expected dataset:
every record and field, the dead threads as the only failures, no page fetched twice."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chains.forum import forum
from chains.runtime.launch import launch
from external_interface.clients import WIRE_CLIENTS
from sandbox.cluster import Cluster, running_cluster
from sandbox.forum.expected import ForumExpected, expected
from sandbox.forum.site import ForumSite
from sandbox.forum.world import ForumShape, ForumWorld
from sandbox.server import SandboxServer, Site
from sandbox.world import World

pytestmark = pytest.mark.integration

WORLD = ForumWorld.build(seed=7)
OTHER = ForumWorld.build(seed=8, shape=ForumShape(boards=(25, 14, 6), users=20))


def stored(cluster: Cluster, collection: str) -> dict[str, dict[str, Any]]:
    """key -> {"data", "job_id"} of every record the cluster's store holds."""
    return {r["key"]: r for r in cluster.runtime.store.read(collection)}


def assert_exact(status: dict[str, Any], want: ForumExpected, base: str) -> None:
    assert status["state"] == ("finished_with_failures" if want.failures else "finished")
    failed = {f["params"]["url"].removeprefix(base): f["reason"] for f in status["failures"]}
    assert set(failed) == set(want.failures)
    assert all(r.startswith(("NotFound", "Gone")) for r in failed.values()), failed
    assert status["totals"]["requests"] == want.requests


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("forum"), World(seed=3),
                         forum=ForumSite(WORLD)) as running:
        yield running


@pytest.mark.parametrize("client", [pytest.param(name, marks=[pytest.mark.slow] if name != "http"
                                                  else []) for name in WIRE_CLIENTS])
def test_the_forum_crawl_stores_exactly_the_forums_records_with_each_client(
        cluster: Cluster, client: str) -> None:
    """The client is one site setting for the job (``client=``), as a site declares it."""
    assert cluster.sandbox is not None
    seen = len(cluster.sandbox.hits())
    before = cluster.sandbox.fetch_counts("/forum/")
    status = cluster.launch(forum, client=client).wait(timeout=240)
    assert_exact(status, expected(WORLD), cluster.sandbox.base_url)
    want = expected(WORLD).records
    for collection, records in want.items():
        got = {key: r["data"] for key, r in stored(cluster, collection).items()}
        assert got == {str(k): v for k, v in records.items()}, collection
    asked = {url.removesuffix("?"): n
             for url, n in (cluster.sandbox.fetch_counts("/forum/") - before).items()}
    assert set(asked) == set(expected(WORLD).urls) and set(asked.values()) == {1}
    agents = {hit.agent for hit in cluster.sandbox.hits()[seen:]}
    assert all(("Chrome/146." in agent) is (client == "impersonate") for agent in agents)


def test_two_jobs_on_two_servers_share_the_workers_and_each_is_exact(cluster: Cluster) -> None:
    other = SandboxServer(Site(World(seed=3), forum=ForumSite(OTHER)))
    other.start_in_thread()
    try:
        assert cluster.sandbox is not None
        servers = {"here": cluster.sandbox, "there": other}
        before = {name: server.fetch_counts("/forum/") for name, server in servers.items()}
        jobs = {name: launch(forum, {}, runtime=cluster.runtime, settings={
            "forum": {"base_url": f"{server.base_url}/forum"}}) for name, server in servers.items()}
        worlds = {"here": WORLD, "there": OTHER}
        for name, job in jobs.items():
            assert_exact(job.wait(timeout=240), expected(worlds[name]), servers[name].base_url)
            asked = servers[name].fetch_counts("/forum/") - before[name]
            assert set(asked.values()) == {1} and len(asked) == expected(worlds[name]).requests
        owner = {job.job_id: worlds[name] for name, job in jobs.items()}
        for collection in ("threads", "posts", "users", "reactions"):
            for key, record in stored(cluster, collection).items():
                want = expected(owner[record["job_id"]]).records[collection]
                assert record["data"] == want[int(key)], (collection, key)
    finally:
        other.shutdown()
        other.server_close()
