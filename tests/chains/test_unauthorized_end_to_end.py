"""A 401 on real workers: on the forum (no session pool) the unit fails at once, never
retried, with its reason; on the demo (a session pool) the session is dropped and the unit
goes again on a fresh one, which gets the page."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chains.forum import forum
from chains.runtime.launch import launch
from chains.runtime.model import Chain, Step
from sandbox.cluster import Cluster, running_cluster
from sandbox.defences import Defences
from sandbox.world import World
from tests.chains.unauthorized_support import unauthorized_server

pytestmark = [pytest.mark.slow, pytest.mark.integration]

PROFILE = Chain(name="profile", start="user_info",
                steps={"user_info": Step(task="demo.h5.user_info")})


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with running_cluster(tmp_path_factory.mktemp("unauthorized"), World(seed=3),
                         defences=Defences(sessions=True)) as running:
        yield running


def test_on_a_site_without_a_session_pool_a_401_fails_the_unit_at_once(
        cluster: Cluster) -> None:
    with unauthorized_server() as server:
        job = launch(forum, {}, runtime=cluster.runtime,
                     settings={"forum": {"base_url": f"{server.base}/forum"}})
        status = job.wait(timeout=60)
    assert status["state"] == "finished_with_failures"
    [failure] = status["failures"]
    assert failure["reason"] == ("ClientError: 401 Unauthorized: the site has no session pool "
                                 "to rotate")
    assert server.asked == [("/forum/", None)]  # one request: never retried
    boards = status["steps"]["boards"]
    assert (boards["failed"], boards["rotations"], boards["retried"]) == (1, 0, 0)


def test_on_a_site_with_a_session_pool_a_401_rotates_to_a_session_that_gets_the_page(
        cluster: Cluster) -> None:
    assert cluster.sandbox is not None
    user = sorted(World(seed=3).users)[0]
    cluster.runtime.providers.cookies.add("demo", "stale", {"sid": "unknown-to-the-site"})
    status = cluster.launch(PROFILE, user_id=user).wait(timeout=120)
    ledger = cluster.runtime.ledger  # the refill's login job may still be running
    cluster.wait_for(lambda: all(ledger.state(j) in ("finished", "finished_with_failures")
                                 for j in ledger.job_ids()), 60, "the login jobs")
    refused = [h.url.removesuffix("?") for h in cluster.sandbox.hits() if h.status == 401]
    stored = cluster.stored_keys()["users"]
    info = status["steps"]["user_info"]
    assert status["state"] == "finished" and status["failures"] == []
    assert refused == [f"/h5/user/{user}"]  # the stale session, refused once
    assert (info["done"], info["rotations"]) == (1, 1)
    assert info["cookie_refreshes"] >= 1  # the fresh session came from a login
    assert stored == [user]
