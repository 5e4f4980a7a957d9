"""The demo chain on real workers with RabbitMQ as the broker (quorum queues, the default,
and classic priority queues): the same graph, the same items, a killed worker's units
delivered again. The state plane stays on the embedded Redis, as in production."""

from __future__ import annotations

from pathlib import Path

import pytest

from sandbox.cluster import running_cluster
from sandbox.world import World
from tests.chains.test_demo_end_to_end import (
    BIG,
    assert_a_killed_worker_loses_nothing,
    assert_items_stored_once,
    assert_matches_world,
    demo,
)
from tests.conftest import rabbitmqctl

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("queue_type", ["quorum", "classic"])
def test_demo_chain_finishes_with_the_sandbox_graph_on_rabbitmq(
        tmp_path: Path, amqp_url: str, queue_type: str) -> None:
    world = World(seed=3)
    env = {"CELERY_BROKER_URL": amqp_url, "CELERY_QUEUE_TYPE": queue_type}
    with running_cluster(tmp_path, world, extra_env=env) as cluster:
        assert cluster.app.conf.broker_url.startswith("amqp://")
        status = cluster.launch(demo, page=1).wait(timeout=180)
        assert_matches_world(status, world)
        assert_items_stored_once(cluster, world)
    types = queue_types(amqp_url.rsplit("/", 1)[1])
    assert types["demo"] == queue_type
    assert types["crawlchain.dead"] == queue_type  # declared by the workers at start


def queue_types(vhost: str) -> dict[str, str]:
    """Queue name -> type, as the broker reports them."""
    rows = rabbitmqctl("list_queues", "-p", vhost, "--no-table-headers", "name", "type")
    return dict(line.split("\t") for line in rows.splitlines() if "\t" in line)


def test_job_with_one_worker_killed_mid_run_finishes_with_identical_items_on_rabbitmq(
        tmp_path: Path, amqp_url: str) -> None:
    with running_cluster(tmp_path, BIG, extra_env={"CELERY_BROKER_URL": amqp_url}) as cluster:
        assert_a_killed_worker_loses_nothing(cluster)
