"""A Prometheus endpoint for the whole cluster: ``python -m monitor.exporter --port 9808``.

One exporter serves ``/metrics`` from Redis, where every worker on every host
counts (``chains.runtime.metrics``), so a Prometheus server scrapes one endpoint instead
of each worker. Nothing is cached: each scrape reads the hashes, the ledger and
the broker's queue lengths afresh, through prometheus_client custom collectors,
and prometheus_client writes the exposition format and serves it.

Labels stay few and bounded. Cluster counters carry ``site``, ``platform``,
``step`` and one bounded label (``outcome``, ``error``, ``status``, ``le``).
Per-job gauges carry a ``job_id``, which is an id and so unbounded over time;
they are exported only for jobs still running or ended within ``--recent-s``
(default 15 minutes), at most ``--max-jobs`` (default 20) of them. A job's
series therefore stop a while after it ends, as a finished batch job's should;
its history stays in Prometheus, and the ledger keeps its exact counts.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

import redis
from celery import Celery
from kombu.exceptions import OperationalError
from prometheus_client import CollectorRegistry, make_wsgi_app
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import ThreadingWSGIServer
from prometheus_client.registry import Collector

from chains.runtime.ledger import Ledger
from chains.runtime.metrics import (
    Family,
    Metrics,
    MetricsData,
    histogram,
    histogram_tasks,
    task_labels,
)
from monitor.snapshot import queue_depths, workers
from utils.logs import configure

TASK_LABELS = ("site", "platform", "step")
JOB_UNIT_STATES = ("spawned", "done", "failed", "skipped")
JOB_STEP_GAUGES = {  # ledger field -> (metric, help)
    "retried": ("crawlchain_job_units_retried", "Retries scheduled for the job's units."),
    "items": ("crawlchain_job_items", "Items the job stored."),
    "unchanged": ("crawlchain_job_units_unchanged", "Units whose items had not changed."),
    "requests": ("crawlchain_job_requests", "Requests the job's units sent."),
}
# name (without _total), help, Redis family, extra label, the label values kept (None: all)
COUNTERS: tuple[tuple[str, str, str, str | None, frozenset[str] | None], ...] = (
    ("crawlchain_units_started", "Units started (deliveries).", "units", None,
     frozenset({"started"})),
    ("crawlchain_units_finished", "Units finished, by outcome.", "units", "outcome",
     frozenset({"done", "skipped", "failed"})),
    ("crawlchain_units_retried", "Units scheduled for a retry.", "units", None,
     frozenset({"retried"})),
    ("crawlchain_units_rotated", "Units retried after a burnt resource (ban, expired session).",
     "units", None, frozenset({"rotated"})),
    ("crawlchain_units_failed_by_error", "Units failed for good, by error class.", "errors",
     "error", None),
    ("crawlchain_fetch_responses", "Fetches by HTTP status (0: no response).", "status",
     "status", None),
    ("crawlchain_fetch_bytes", "Body bytes fetched.", "bytes", None, None),
    ("crawlchain_items_stored", "Items stored.", "items", None, None),
)
HISTOGRAMS: tuple[tuple[str, str, Family], ...] = (
    ("crawlchain_fetch_duration_seconds", "Fetch duration.", "fetch_s"),
    ("crawlchain_parse_duration_seconds", "Parse duration.", "parse_s"),
)
UNAVAILABLE = (redis.RedisError, OperationalError, OSError)  # the state plane or the broker
log = logging.getLogger("monitor.exporter")


# -- cluster counters -----------------------------------------------------------
def counters(data: MetricsData) -> Iterator[Metric]:
    """Every family ``chains.runtime.metrics`` counts, with task names split into labels."""
    for name, help_text, family, label, only in COUNTERS:
        metric = CounterMetricFamily(name, help_text,
                                     labels=[*TASK_LABELS, *([label] if label else [])])
        for (task, lab), value in sorted(data.values.get(family, {}).items()):
            if only is None or lab in only:
                metric.add_metric([*task_labels(task).values(), *([lab] if label else [])],
                                  value)
        yield metric
    for name, help_text, family in HISTOGRAMS:
        hist = HistogramMetricFamily(name, help_text, labels=list(TASK_LABELS))
        for task in histogram_tasks(data, family):
            hist.add_metric(list(task_labels(task).values()), histogram(data, family, task),
                            data.get(family, task, "sum"))
        yield hist


# -- jobs, queues, workers ------------------------------------------------------------
def recent_jobs(ledger: Ledger, max_jobs: int = 20, recent_s: float = 900.0,
                scan: int = 100, now: float | None = None) -> list[tuple[str, dict[str, str]]]:
    """Jobs running, or ended within ``recent_s``: newest first, at most ``max_jobs``."""
    now = time.time() if now is None else now
    picked = []
    for job_id in ledger.job_ids(scan):
        meta = ledger.meta(job_id)
        ended = float(meta.get("finished_at", now))
        if meta.get("state") == "running" or now - ended <= recent_s:
            picked.append((job_id, meta))
        if len(picked) >= max_jobs:
            break
    return picked


def job_gauges(ledger: Ledger, picked: list[tuple[str, dict[str, str]]]) -> Iterator[Metric]:
    """The ledger's exact per-step counts of the picked jobs, then their meta."""
    counts = {job_id: ledger.counts(job_id) for job_id, _ in picked}
    units = GaugeMetricFamily("crawlchain_job_units", "Units of a job's step, by state.",
                              labels=["job_id", "step", "state"])
    for job_id, steps in counts.items():
        for step, fields in sorted(steps.items()):
            for state in JOB_UNIT_STATES:
                units.add_metric([job_id, step, state], fields.get(state, 0))
    yield units
    for field, (name, help_text) in JOB_STEP_GAUGES.items():
        gauge = GaugeMetricFamily(name, help_text, labels=["job_id", "step"])
        for job_id, steps in counts.items():
            for step, fields in sorted(steps.items()):
                gauge.add_metric([job_id, step], fields.get(field, 0))
        yield gauge
    yield from _job_meta(ledger, picked)


def _job_meta(ledger: Ledger, picked: list[tuple[str, dict[str, str]]]) -> Iterator[Metric]:
    pending = GaugeMetricFamily("crawlchain_job_pending",
                                "Units registered and not finished yet.", labels=["job_id"])
    info = GaugeMetricFamily("crawlchain_job_info", "Always 1; the job's state as a label.",
                             labels=["job_id", "state"])
    for job_id, meta in picked:
        pending.add_metric([job_id], ledger.pending(job_id))
        info.add_metric([job_id, meta.get("state", "unknown")], 1)
    yield pending
    yield info
    for field, name in (("created_at", "crawlchain_job_created_timestamp_seconds"),
                        ("finished_at", "crawlchain_job_finished_timestamp_seconds")):
        moment = GaugeMetricFamily(name, f"The job's {field.replace('_', ' ')} time.",
                                   labels=["job_id"])
        for job_id, meta in picked:
            if field in meta:
                moment.add_metric([job_id], float(meta[field]))
        yield moment


def queue_gauges(depths: Mapping[str, int]) -> Iterator[Metric]:
    gauge = GaugeMetricFamily("crawlchain_queue_messages",
                              "Messages ready in a queue (all priorities).", labels=["queue"])
    for queue, depth in sorted(depths.items()):
        gauge.add_metric([queue], depth)
    yield gauge


def worker_gauges(alive: Mapping[str, Mapping[str, Any]]) -> Iterator[Metric]:
    yield GaugeMetricFamily("crawlchain_workers_alive", "Workers answering the remote control.",
                            value=len(alive))
    pools = GaugeMetricFamily("crawlchain_worker_concurrency", "Pool size of each alive worker.",
                              labels=["worker"])
    for name, info in sorted(alive.items()):
        pools.add_metric([name], info["concurrency"] or 0)
    yield pools


# -- collectors: what a scrape reads ---------------------------------------------------
class CountersCollector(Collector):
    """The cluster-wide counters every worker writes to the state Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self.client = client

    def collect(self) -> Iterable[Metric]:
        return list(counters(Metrics(self.client).read()))


class JobsCollector(Collector):
    """The ledger's per-job gauges, for running and recently ended jobs only."""

    def __init__(self, client: redis.Redis, max_jobs: int = 20, recent_s: float = 900.0) -> None:
        self.client, self.max_jobs, self.recent_s = client, max_jobs, recent_s

    def collect(self) -> Iterable[Metric]:
        ledger = Ledger(self.client)
        return list(job_gauges(ledger, recent_jobs(ledger, self.max_jobs, self.recent_s)))


class BrokerCollector(Collector):
    """Queue depths from the broker; alive workers too when ``inspect_timeout`` > 0."""

    def __init__(self, app: Celery, inspect_timeout: float = 0.0,
                 queues: Iterable[str] = ()) -> None:
        self.app, self.inspect_timeout, self.queues = app, inspect_timeout, tuple(queues)

    def collect(self) -> Iterable[Metric]:
        found = list(queue_gauges(queue_depths(self.app, self.queues)))
        if self.inspect_timeout > 0:
            found += worker_gauges(workers(self.app, self.inspect_timeout))
        return found


def registry(client: redis.Redis, app: Celery | None, max_jobs: int = 20,
             recent_s: float = 900.0, inspect_timeout: float = 0.0,
             queues: Iterable[str] = ()) -> CollectorRegistry:
    """A registry of this exporter's collectors only (no process metrics of its own)."""
    found = CollectorRegistry(auto_describe=False)
    found.register(CountersCollector(client))
    found.register(JobsCollector(client, max_jobs, recent_s))
    if app is not None:
        found.register(BrokerCollector(app, inspect_timeout, queues))
    return found


# -- serving -------------------------------------------------------------------------
Wsgi = Callable[[dict[str, Any], Callable[..., Any]], Iterable[bytes]]


def metrics_app(source: CollectorRegistry) -> Wsgi:
    """prometheus_client's WSGI app on ``/metrics`` only; a scrape the state plane cannot
    answer gets 503 and the reason, and the exporter stays up."""
    inner = make_wsgi_app(source)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        if environ.get("PATH_INFO") != "/metrics":
            start_response("404 Not Found", [("Content-Type", "text/plain")])
            return [b"not found; see /metrics\n"]
        try:
            return list(inner(environ, start_response))
        except UNAVAILABLE as exc:
            log.warning("scrape answered 503: state plane unavailable: %s", exc)
            start_response("503 Service Unavailable", [("Content-Type", "text/plain")])
            return [f"state plane unavailable: {exc}\n".encode()]

    return app


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would flood the log; errors still reach stderr."""


def serve(source: CollectorRegistry, host: str = "127.0.0.1", port: int = 9808) -> WSGIServer:
    """prometheus_client's threading WSGI server, bound but not serving yet."""
    return make_server(host, port, metrics_app(source), ThreadingWSGIServer,
                       handler_class=_QuietHandler)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m monitor.exporter", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default loopback)")
    parser.add_argument("--port", type=int, default=9808, help="0 picks a free port")
    parser.add_argument("--max-jobs", type=int, default=20)
    parser.add_argument("--recent-s", type=float, default=900.0)
    parser.add_argument("--workers", type=float, default=0.0, metavar="TIMEOUT_S",
                        help="also ask workers for their pools, waiting this long per scrape")
    args = parser.parse_args(argv)
    configure()  # LOG_LEVEL, LOG_FORMAT

    from chains.runtime.context import state_redis
    from config import get_settings
    from worker import make_app

    settings = get_settings()
    source = registry(state_redis(settings.state.redis_url), make_app(settings), args.max_jobs,
                      args.recent_s, args.workers)
    server = serve(source, args.host, args.port)
    url = f"http://{args.host}:{server.server_address[1]}/metrics"
    log.info("serving %s", url)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
