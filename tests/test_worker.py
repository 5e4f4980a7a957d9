"""The Celery app keeps the promises the design brief relies on."""

from __future__ import annotations

from pathlib import Path

import pytest

from chains.broker.app import route_by_site
from chains.demo import demo
from chains.runtime.registry import steps
from config import Settings
from sandbox.cluster import running_cluster
from sandbox.world import World
from worker import make_app


def test_json_only_no_pickle_anywhere() -> None:
    conf = make_app(Settings()).conf
    assert conf.accept_content == ["json"] and conf.task_serializer == "json"
    assert "pickle" not in conf.result_accept_content


def test_units_are_acked_late_and_requeued_when_a_child_dies() -> None:
    conf = make_app(Settings()).conf
    assert conf.task_acks_late and conf.task_reject_on_worker_lost
    assert conf.worker_prefetch_multiplier == 1


def test_visibility_timeout_exceeds_every_time_limit_and_backoff() -> None:
    settings = Settings()
    conf = make_app(settings).conf
    visibility = conf.broker_transport_options["visibility_timeout"]
    assert visibility > conf.task_time_limit > conf.task_soft_time_limit
    assert visibility > settings.task.backoff_max_s


def test_a_dead_workers_units_come_back_soon_after_the_visibility_timeout() -> None:
    options = make_app(Settings()).conf.broker_transport_options
    sweep = options["unacked_restore_interval"] * options["unacked_restore_throttle"]
    assert sweep <= max(10, options["visibility_timeout"] // 10)


def test_publishing_rides_out_a_broker_blip() -> None:
    conf = make_app(Settings()).conf
    assert conf.task_publish_retry and conf.task_publish_retry_policy["max_retries"] >= 3
    assert conf.broker_connection_retry_on_startup


def test_every_declared_step_is_a_task_routed_to_its_sites_queue() -> None:
    tasks = make_app(Settings()).tasks
    assert "demo.h5.feed" in steps() and set(steps()) <= set(tasks)
    assert route_by_site("demo.app.detail", (), {}, {}) == {"queue": "demo"}


@pytest.mark.integration
def test_a_pickled_message_is_refused_and_the_worker_goes_on(tmp_path: Path) -> None:
    world = World(seed=3)
    with running_cluster(tmp_path, world) as cluster:
        res = cluster.runtime
        res.ledger.create_job("pickled", demo.model_dump(mode="json"), {})
        res.ledger.register("pickled", [("u1", "feed")])
        cluster.app.send_task("demo.h5.feed", queue="demo", serializer="pickle", args=[
            {"job": "pickled", "step": "feed", "depth": 0},
            [{"id": "u1", "params": {"page": 1}, "page": 0}]])
        status = cluster.launch(demo, page=1).wait(timeout=120)
        assert res.ledger.pending("pickled") == 1  # never executed
        log = (tmp_path / "w0.log").read_text()
    assert status["state"] == "finished"
    assert "Refusing to deserialize untrusted content of type pickle" in log
