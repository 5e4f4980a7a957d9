"""The Prometheus exporter: one /metrics for the cluster, from the Redis counters and ledger."""

from __future__ import annotations

import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector
from redis.backoff import NoBackoff
from redis.retry import Retry

from chains.runtime.job import Job
from chains.runtime.ledger import Ledger
from chains.runtime.metrics import Metrics, Tally
from monitor.exporter import queue_gauges, recent_jobs, registry, serve, worker_gauges
from sandbox.cluster import Cluster
from tests.monitor.conftest import start_module, stop

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]
# Every family the hand-written exporter served before prometheus_client, captured from it
FAMILIES_BEFORE = Path(__file__).with_name("exporter_families.json")


def samples(text: str) -> Samples:
    """Parsed with Prometheus' own parser: the text must be valid exposition format."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def value(parsed: Samples, name: str, **labels: str) -> float:
    return parsed[(name, frozenset(labels.items()))]


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as reply:
        assert reply.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        return str(reply.read().decode())


@pytest.fixture
def local_exporter(redis_client: redis.Redis) -> Iterator[str]:
    server = serve(registry(redis_client, None), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_the_families_names_types_and_labels_are_those_served_before(
        redis_client: redis.Redis, local_exporter: str) -> None:
    Metrics(redis_client).send(
        Tally("demo.h5.feed").started(3).units_finished({"done": 2, "failed": 1}, {"E": 1})
        .retried(1, 1).fetched(200, 512, 0.2).parsed(0.01).stored(7))
    Ledger(redis_client).create_job("j1", {}, {})
    redis_client.hset("cc:job:{j1}:meta", mapping={"state": "finished", "finished_at": 9e9})
    redis_client.hset("cc:job:{j1}:counts", mapping={"feed:spawned": 3, "feed:done": 2})
    text = get(local_exporter + "/metrics")
    text += generate_latest_of([*queue_gauges({"demo": 3}),
                                *worker_gauges({"w@h": {"concurrency": 2}})])
    now = {family.name: {"type": family.type, "samples": sorted({s.name for s in family.samples}),
                         "labels": sorted({k for s in family.samples for k in s.labels})}
           for family in text_string_to_metric_families(text)}
    assert now == json.loads(FAMILIES_BEFORE.read_text())


def generate_latest_of(metrics: list[Metric]) -> str:
    """The exposition text of a few families, as the broker collector yields them."""
    class Fixed(Collector):
        def collect(self) -> list[Metric]:
            return metrics

    found = CollectorRegistry(auto_describe=False)
    found.register(Fixed())
    return generate_latest(found).decode()


def test_the_fetch_latency_histogram_is_cumulative_per_site_step(
        redis_client: redis.Redis, local_exporter: str) -> None:
    metrics = Metrics(redis_client)
    for seconds in (0.03, 0.2, 0.2, 3.0, 60.0):
        metrics.send(Tally("demo.h5.feed").fetched(200, 100, seconds))
    metrics.send(Tally("demo.app.detail").fetched(404, 10, 0.07))
    parsed = samples(get(local_exporter + "/metrics"))
    feed = {"site": "demo", "platform": "h5", "step": "feed"}
    bucket = "crawlchain_fetch_duration_seconds_bucket"
    assert [value(parsed, bucket, **feed, le=le) for le in ("0.05", "0.25", "5.0", "+Inf")] == [
        1, 3, 4, 5]
    assert value(parsed, "crawlchain_fetch_duration_seconds_count", **feed) == 5
    assert value(parsed, "crawlchain_fetch_duration_seconds_sum", **feed) == pytest.approx(63.43)
    detail = {"site": "demo", "platform": "app", "step": "detail"}
    assert value(parsed, "crawlchain_fetch_responses_total", **detail, status="404") == 1
    assert value(parsed, "crawlchain_fetch_bytes_total", **feed) == 500


def test_a_scrape_while_redis_is_away_answers_503_and_the_exporter_stays_up(
        redis_socket: Path) -> None:
    gone = redis.Redis(unix_socket_path=str(redis_socket) + ".nobody",
                       retry=Retry(NoBackoff(), 0))
    server = serve(registry(gone, None), "127.0.0.1", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_address[1]}/metrics"
    try:
        for _ in range(2):
            with pytest.raises(urllib.error.HTTPError) as err:
                urllib.request.urlopen(url, timeout=10)
            assert err.value.code == 503
            assert b"state plane unavailable" in err.value.read()
    finally:
        server.shutdown()
        server.server_close()


def test_counters_are_labelled_by_site_platform_step_and_one_bounded_label(
        redis_client: redis.Redis, local_exporter: str) -> None:
    metrics = Metrics(redis_client)
    metrics.send(Tally("demo.h5.feed").started(3))
    metrics.send(Tally("demo.h5.feed").units_finished({"done": 2, "failed": 1}, {"NotFound": 1}))
    metrics.send(Tally("demo.h5.feed").fetched(200, 512, 0.2))
    metrics.send(Tally("demo.h5.feed").stored(7))
    parsed = samples(get(local_exporter + "/metrics"))
    feed = {"site": "demo", "platform": "h5", "step": "feed"}
    assert value(parsed, "crawlchain_units_started_total", **feed) == 3
    assert value(parsed, "crawlchain_units_finished_total", **feed, outcome="done") == 2
    assert value(parsed, "crawlchain_units_failed_by_error_total", **feed, error="NotFound") == 1
    assert value(parsed, "crawlchain_fetch_responses_total", **feed, status="200") == 1
    assert value(parsed, "crawlchain_fetch_bytes_total", **feed) == 512
    assert value(parsed, "crawlchain_items_stored_total", **feed) == 7
    assert value(parsed, "crawlchain_fetch_duration_seconds_bucket", **feed, le="0.25") == 1
    assert value(parsed, "crawlchain_fetch_duration_seconds_bucket", **feed, le="0.1") == 0
    assert value(parsed, "crawlchain_fetch_duration_seconds_count", **feed) == 1


def test_other_paths_are_not_found(local_exporter: str) -> None:
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(local_exporter + "/", timeout=10)
    assert err.value.code == 404


def test_job_gauges_are_bounded_to_running_and_recent_jobs(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    for job_id in ("old", "new", "live"):
        ledger.create_job(job_id, {}, {})
    redis_client.hset("cc:job:{old}:meta", mapping={"state": "finished", "finished_at": 1000.0})
    redis_client.hset("cc:job:{new}:meta", mapping={"state": "finished", "finished_at": 9000.0})
    picked = [job_id for job_id, _ in recent_jobs(ledger, recent_s=900, now=9500.0)]
    assert sorted(picked) == ["live", "new"]
    assert len(recent_jobs(ledger, max_jobs=1, now=9500.0)) == 1


def test_error_class_labels_are_made_safe_to_export(
        redis_client: redis.Redis, local_exporter: str) -> None:
    Metrics(redis_client).send(Tally("demo.h5.feed").units_finished({"failed": 1},
                                                                   {'Bad"Name\\': 1}))
    parsed = samples(get(local_exporter + "/metrics"))
    errors = [labels for name, labels in parsed if name.startswith("crawlchain_units_failed_by")]
    assert [dict(labels)["error"] for labels in errors] == ["Bad_Name_"]  # safe_label's work


@pytest.mark.integration
def test_metrics_endpoint_equals_the_ledger_counts_of_a_finished_job(
        cluster: Cluster, finished_job: Job) -> None:
    proc = start_module(cluster, "monitor.exporter", "--port", "0", "--workers", "1")
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().split()[-1]
        assert url.startswith("http://127.0.0.1:")
        parsed = samples(get(url))
    finally:
        stop(proc)
    job = finished_job.job_id
    counts = cluster.runtime.ledger.counts(job)
    for step, fields in counts.items():
        for state in ("spawned", "done", "failed", "skipped"):
            assert value(parsed, "crawlchain_job_units", job_id=job, step=step,
                         state=state) == fields[state], (step, state)
        assert value(parsed, "crawlchain_job_items", job_id=job, step=step) == fields["items"]
    assert value(parsed, "crawlchain_job_pending", job_id=job) == 0
    assert value(parsed, "crawlchain_job_info", job_id=job, state="finished") == 1
    assert value(parsed, "crawlchain_queue_messages", queue="demo") == 0
    assert value(parsed, "crawlchain_workers_alive") == 1


@pytest.mark.integration
def test_unit_counters_from_every_worker_equal_the_ledger(
        cluster: Cluster, finished_job: Job) -> None:
    """Counters from every worker equal the ledger's totals over every job of the cluster."""
    data = Metrics(cluster.runtime.redis).read()
    ledger = cluster.runtime.ledger
    ledger_done = sum(c["done"] for j in ledger.job_ids(1000) for c in ledger.counts(j).values())
    assert data.total("units", "done") == ledger_done
