"""A Prometheus endpoint for the whole cluster: ``python -m monitor.exporter --port 9808``.

One exporter serves ``/metrics`` from Redis, where every worker on every host
counts (``monitor.metrics``), so a Prometheus server scrapes one endpoint instead
of each worker. Nothing is cached: each scrape reads the hashes, the ledger and
the broker's queue lengths afresh.

Labels stay few and bounded. Cluster counters carry ``site``, ``platform``,
``step`` and one bounded label (``outcome``, ``error``, ``status``, ``le``).
Per-job gauges carry a ``job_id``, which is an id and so unbounded over time;
they are exported only for jobs still running or ended within ``--recent-s``
(default 15 minutes), at most ``--max-jobs`` (default 20) of them. A job's
series therefore stop a while after it ends, as a finished batch job's should;
its history stays in Prometheus, and the ledger keeps its exact counts.

The text format is written by hand (it is a few lines); no client library needed.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import redis
from celery import Celery
from kombu.exceptions import OperationalError

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

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
JOB_UNIT_STATES = ("spawned", "done", "failed", "skipped")
JOB_STEP_GAUGES = {  # ledger field -> (metric, help)
    "retried": ("crawlchain_job_units_retried", "Retries scheduled for the job's units."),
    "items": ("crawlchain_job_items", "Items the job stored."),
    "unchanged": ("crawlchain_job_units_unchanged", "Units whose items had not changed."),
    "requests": ("crawlchain_job_requests", "Requests the job's units sent."),
}


class Exposition:
    """Prometheus text format, version 0.0.4."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def family(self, name: str, kind: str, help_text: str) -> None:
        self.lines += [f"# HELP {name} {help_text}", f"# TYPE {name} {kind}"]

    def sample(self, name: str, labels: Mapping[str, str], value: float) -> None:
        body = ",".join(f'{k}="{escape(v)}"' for k, v in labels.items())
        self.lines.append(f"{name}{{{body}}} {number(value)}" if body else
                          f"{name} {number(value)}")

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


# -- cluster counters -----------------------------------------------------------
def counters(out: Exposition, data: MetricsData) -> None:
    """Every family ``monitor.metrics`` counts, with task names split into labels."""
    units = data.values.get("units", {})
    _labelled(out, units, "crawlchain_units_started_total", "Units started (deliveries).",
              None, {"started"})
    _labelled(out, units, "crawlchain_units_finished_total", "Units finished, by outcome.",
              "outcome", {"done", "skipped", "failed"})
    _labelled(out, units, "crawlchain_units_retried_total", "Units scheduled for a retry.",
              None, {"retried"})
    _labelled(out, units, "crawlchain_units_rotated_total",
              "Units retried after a burnt resource (ban, expired session).", None, {"rotated"})
    _labelled(out, data.values.get("errors", {}), "crawlchain_units_failed_by_error_total",
              "Units failed for good, by error class.", "error")
    _labelled(out, data.values.get("status", {}), "crawlchain_fetch_responses_total",
              "Fetches by HTTP status (0: no response).", "status")
    _labelled(out, data.values.get("bytes", {}), "crawlchain_fetch_bytes_total",
              "Body bytes fetched.", None)
    _labelled(out, data.values.get("items", {}), "crawlchain_items_stored_total",
              "Items stored.", None)
    _histogram(out, data, "fetch_s", "crawlchain_fetch_duration_seconds", "Fetch duration.")
    _histogram(out, data, "parse_s", "crawlchain_parse_duration_seconds", "Parse duration.")


def _labelled(out: Exposition, values: Mapping[tuple[str, str], float], name: str,
              help_text: str, label: str | None, only: set[str] | None = None) -> None:
    out.family(name, "counter", help_text)
    for (task, lab), value in sorted(values.items()):
        if only is None or lab in only:
            extra = {label: lab} if label else {}
            out.sample(name, {**task_labels(task), **extra}, value)


def _histogram(out: Exposition, data: MetricsData, family: Family, name: str,
               help_text: str) -> None:
    out.family(name, "histogram", help_text)
    for task in histogram_tasks(data, family):
        labels = task_labels(task)
        for le, count in histogram(data, family, task):
            out.sample(f"{name}_bucket", {**labels, "le": le}, count)
        out.sample(f"{name}_sum", labels, data.get(family, task, "sum"))
        out.sample(f"{name}_count", labels, data.get(family, task, "count"))


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


def job_gauges(out: Exposition, ledger: Ledger, picked: list[tuple[str, dict[str, str]]]) -> None:
    """The ledger's exact per-step counts of the picked jobs."""
    counts = {job_id: ledger.counts(job_id) for job_id, _ in picked}
    out.family("crawlchain_job_units", "gauge", "Units of a job's step, by state.")
    for job_id, steps in counts.items():
        for step, fields in sorted(steps.items()):
            for state in JOB_UNIT_STATES:
                out.sample("crawlchain_job_units", {"job_id": job_id, "step": step,
                                                    "state": state}, fields.get(state, 0))
    for field, (name, help_text) in JOB_STEP_GAUGES.items():
        out.family(name, "gauge", help_text)
        for job_id, steps in counts.items():
            for step, fields in sorted(steps.items()):
                out.sample(name, {"job_id": job_id, "step": step}, fields.get(field, 0))
    _job_meta(out, ledger, picked)


def _job_meta(out: Exposition, ledger: Ledger, picked: list[tuple[str, dict[str, str]]]) -> None:
    out.family("crawlchain_job_pending", "gauge", "Units registered and not finished yet.")
    for job_id, _ in picked:
        out.sample("crawlchain_job_pending", {"job_id": job_id}, ledger.pending(job_id))
    out.family("crawlchain_job_info", "gauge", "Always 1; the job's state as a label.")
    for job_id, meta in picked:
        out.sample("crawlchain_job_info", {"job_id": job_id,
                                           "state": meta.get("state", "unknown")}, 1)
    for field, name in (("created_at", "crawlchain_job_created_timestamp_seconds"),
                        ("finished_at", "crawlchain_job_finished_timestamp_seconds")):
        out.family(name, "gauge", f"The job's {field.replace('_', ' ')} time.")
        for job_id, meta in picked:
            if field in meta:
                out.sample(name, {"job_id": job_id}, float(meta[field]))


def queue_gauges(out: Exposition, depths: Mapping[str, int]) -> None:
    out.family("crawlchain_queue_messages", "gauge", "Messages ready in a queue (all priorities).")
    for queue, depth in sorted(depths.items()):
        out.sample("crawlchain_queue_messages", {"queue": queue}, depth)


def worker_gauges(out: Exposition, alive: Mapping[str, Mapping[str, Any]]) -> None:
    out.family("crawlchain_workers_alive", "gauge", "Workers answering the remote control.")
    out.sample("crawlchain_workers_alive", {}, len(alive))
    out.family("crawlchain_worker_concurrency", "gauge", "Pool size of each alive worker.")
    for name, info in sorted(alive.items()):
        out.sample("crawlchain_worker_concurrency", {"worker": name}, info["concurrency"] or 0)


class Source:
    """What a scrape reads: the state Redis, and the Celery app for the broker."""

    def __init__(self, client: redis.Redis, app: Celery | None, max_jobs: int = 20,
                 recent_s: float = 900.0, inspect_timeout: float = 0.0,
                 queues: Iterable[str] = ()) -> None:
        self.client, self.app = client, app
        self.max_jobs, self.recent_s = max_jobs, recent_s
        self.inspect_timeout, self.queues = inspect_timeout, tuple(queues)

    def render(self) -> str:
        out = Exposition()
        counters(out, Metrics(self.client).read())
        ledger = Ledger(self.client)
        job_gauges(out, ledger, recent_jobs(ledger, self.max_jobs, self.recent_s))
        if self.app is not None:
            queue_gauges(out, queue_depths(self.app, self.queues))
            if self.inspect_timeout > 0:
                worker_gauges(out, workers(self.app, self.inspect_timeout))
        return out.text()


class Handler(BaseHTTPRequestHandler):
    server: ExporterServer

    def do_GET(self) -> None:
        if self.path.split("?", 1)[0] != "/metrics":
            self._reply(404, "text/plain", b"not found; see /metrics\n")
            return
        try:
            body = self.server.source.render().encode()
        except (redis.RedisError, OperationalError, OSError) as exc:  # say so, stay up
            self._reply(503, "text/plain", f"state plane unavailable: {exc}\n".encode())
            return
        self._reply(200, CONTENT_TYPE, body)

    def _reply(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would flood the log; errors still reach stderr."""


class ExporterServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, source: Source, host: str = "127.0.0.1", port: int = 9808) -> None:
        super().__init__((host, port), Handler)
        self.source = source


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

    from chains.runtime.context import state_redis
    from config import get_settings
    from worker import make_app

    settings = get_settings()
    source = Source(state_redis(settings.state.redis_url), make_app(settings), args.max_jobs,
                    args.recent_s, args.workers)
    server = ExporterServer(source, args.host, args.port)
    print(f"serving http://{args.host}:{server.server_address[1]}/metrics", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
