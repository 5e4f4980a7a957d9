"""A real cluster (redis-server, the sandbox, Celery workers) with the API served over it,
for the slow tests that follow jobs to their end through HTTP or a browser."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from sandbox.calls import Answer, Call
from sandbox.cluster import Cluster, running_cluster
from sandbox.forum.site import ForumSite
from sandbox.forum.world import ForumShape, ForumWorld
from sandbox.server import Faults
from sandbox.world import World
from tests.api.conftest import TOKEN, api_for, serving

SHAPE = ForumShape(boards=(25, 14, 6), users=20, missing=0, deleted=0)  # no dead thread


class BrokenForum(ForumSite):
    """The forum with some user profiles answering 404 until ``fix``; its threads dead
    or alive as the world says (none dead in ``SHAPE``)."""

    def __init__(self, world: ForumWorld, broken: set[int]) -> None:
        super().__init__(world)
        self.broken = set(broken)

    def user(self, world: ForumWorld, call: Call, user: str) -> Answer:
        if int(user) in self.broken:
            raise KeyError(user)  # the site answers 404
        return super().user(world, call, user)

    def fix(self) -> None:
        self.broken.clear()


def broken_forum(count: int = 3) -> BrokenForum:
    """A small forum whose first ``count`` posting users' profiles answer 404."""
    world = ForumWorld.build(seed=7, shape=SHAPE)
    authors = sorted({p.author_id for t in world.listed() for p in world.posts_of(t)})
    return BrokenForum(world, set(authors[:count]))


@dataclass
class ApiCluster:
    cluster: Cluster
    url: str
    forum: BrokenForum

    def api(self) -> requests.Session:
        client = requests.Session()
        client.headers["Authorization"] = f"Bearer {TOKEN}"
        return client

    @property
    def forum_url(self) -> str:
        assert self.cluster.sandbox is not None
        return f"{self.cluster.sandbox.base_url}/forum"

    def launch_forum(self) -> str:
        answer = self.api().post(self.url + "/api/jobs", json={
            "chain": "forum", "settings": {"base_url": self.forum_url}})
        assert answer.status_code == 201, answer.text
        return str(answer.json()["job_id"])

    def summary(self, job_id: str) -> dict[str, Any]:
        return dict(self.api().get(f"{self.url}/api/jobs/{job_id}").json())

    def wait(self, job_id: str, done: Callable[[dict[str, Any]], bool], timeout: float,
             what: str) -> dict[str, Any]:
        """The job's summary once ``done`` holds for it; at most ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while not done(summary := self.summary(job_id)):
            assert time.monotonic() < deadline, f"gave up after {timeout}s waiting for {what}"
            time.sleep(0.2)
        return summary


@contextmanager
def api_cluster(workdir: Path, workers: int = 1, forum: BrokenForum | None = None,
                faults: Faults | None = None) -> Iterator[ApiCluster]:
    """A running cluster with ``workers`` workers, and the API over it on loopback."""
    chosen = forum or broken_forum()
    with running_cluster(workdir, World(seed=3), workers=workers, forum=chosen,
                         faults=faults) as cluster:
        runtime = cluster.build_runtime()
        try:
            with serving(api_for(runtime, inspect_timeout_s=1.0)) as url:
                yield ApiCluster(cluster, url, chosen)
        finally:
            runtime.close()
