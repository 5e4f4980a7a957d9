"""A session pool that runs dry mid-job is refilled by the login chain, and the job finishes."""

from __future__ import annotations

from pathlib import Path

import pytest

from chains.runtime.model import Chain, Link, Step
from chains.runtime.schedule import LAUNCH_TASK
from sandbox.cluster import running_cluster
from sandbox.defences import Defences
from sandbox.world import World, expected_keys

pytestmark = pytest.mark.integration

AUTHORS = Chain(
    name="authors", start="feed",
    steps={"feed": Step(task="demo.h5.feed"), "user_info": Step(task="demo.h5.user_info",
                                                                batch_size=5)},
    links=[Link(src="feed", records="feed_entries", dst="user_info",
                map={"user_id": "author_id"})],
)


def test_sessions_spent_mid_job_are_replaced_by_logins_and_every_profile_is_stored(
        tmp_path: Path) -> None:
    world = World(seed=3)
    authors = world.expected()["user_info"]["units"]
    defences = Defences(sessions=True, session_uses=3)  # the pool runs dry every 3 pages
    with running_cluster(tmp_path, world, defences=defences) as cluster:
        assert cluster.sandbox is not None
        job = cluster.launch(AUTHORS, page=1)
        job.wait(timeout=180)
        ledger = cluster.runtime.ledger  # a login launched near the end may still run
        cluster.wait_for(lambda: all(ledger.state(j) == "finished" for j in ledger.job_ids()),
                         60, "the login jobs")
        status = job.status()
        stored = set(cluster.stored_keys()["users"])
        logins = cluster.sandbox.site.guard.desk.logins
        expired = sum(1 for h in cluster.sandbox.hits() if h.status == 401)
        login_jobs = [j for j in ledger.job_ids() if "login" in ledger.counts(j)]
    info = status["steps"]["user_info"]
    assert status["state"] == "finished" and status["failures"] == []
    assert (info["done"], info["failed"]) == (authors, 0)
    assert stored == expected_keys(world)["users"]
    assert expired >= 1 and info["rotations"] == expired  # each 401: the session dropped
    assert authors / 3 <= logins == info["cookie_refreshes"] == info["captcha_solves"]
    assert len(login_jobs) * 2 >= logins  # refills launched as login jobs, two sessions each


def test_a_scheduled_refill_logs_in_only_while_the_pool_is_low(tmp_path: Path) -> None:
    with running_cluster(tmp_path, World(seed=3), defences=Defences(sessions=True)) as cluster:
        res, ledger = cluster.runtime, cluster.runtime.ledger
        log = tmp_path / "w0.log"

        def beat_fires(nth: int) -> None:  # what beat sends for Schedule(..., when_low=...)
            cluster.app.send_task(LAUNCH_TASK, args=["demo-login", {"turn": 0}],
                              kwargs={"when_low": "cookie:demo"}, queue="demo")
            cluster.wait_for(lambda: log.read_text().count(f"{LAUNCH_TASK}[") >= 2 * nth, 60,
                             f"launch {nth} handled")  # one line received, one succeeded
            cluster.wait_for(lambda: all(ledger.state(j) == "finished"
                                         for j in ledger.job_ids()), 60, "the login jobs")

        ready = []
        for nth in range(1, 5):
            beat_fires(nth)
            ready.append(res.providers.cookies.stats("demo").ready)
        jobs = len(ledger.job_ids())
    assert ready == [1, 2, 2, 2]  # low at 0 and 1 (RESOURCES_REFILL_BELOW=1), not at 2
    assert jobs == 2
