"""This project's side of ``bench/crawl.py``: a private cluster, one crawl, its figures.

A cluster is what production runs, started fresh for every measured run: the
embedded ``redis-server`` on a unix socket (AOF on, as by default) and K Celery
workers as real processes on queue ``properties`` (or the ``queues`` given), items
in SQLite. Every process
runs under ``timeout`` so it ends by itself, and is stopped by pid.

A run launches the chain (one job, or one job per shard) once the workers answer
a ping, and ends when the ledger says every job finished. CPU counts every
process that crawls: redis, the workers with their pool children (storage is
SQLite inside them) and the launcher's own CPU for the launch calls. Wall time is
the ledger's, from the first job's creation to the last job's finish. What the
crawl cost the shared Redis over the same window (commands, round trips, broker
messages, its CPU) is in ``extra["redis"]`` (``bench.redis_cost``).
"""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from celery import Celery

from bench.proctree import Watch, cpu_between, machine_busy_s
from bench.redis_cost import RedisCost, RedisSnapshot
from chains.broker.dispatch import CeleryDispatch
from chains.runtime.context import Runtime
from chains.runtime.launch import launch_many
from chains.runtime.ledger import FINISHED, FINISHED_WITH_FAILURES
from chains.runtime.model import Chain
from ops import embedded_redis
from sandbox.cluster import local_env, runtime_for

ROOT = Path(__file__).resolve().parent.parent
MAX_LIFE_S = 2 * 3600


@dataclass(frozen=True)
class Layout:
    """How the project's concurrency is laid out over processes and threads."""

    workers: int = 1
    pool: str = "prefork"
    worker_concurrency: int = 2
    unit_threads: int = 8  # per worker process: units of one batch fetched at once
    max_fetches: int = 0  # per worker process: fetches in flight (0: no cap)

    @property
    def label(self) -> str:
        cap = f"-f{self.max_fetches}" if self.max_fetches else ""
        return (f"{self.workers}x{self.pool}-c{self.worker_concurrency}-t{self.unit_threads}"
                f"{cap}")

    @classmethod
    def for_latency(cls, concurrency: int, pool: str, per_process: int = 16,
                    spare: float = 0.25) -> Layout:
        """``concurrency`` fetches in flight at most, over as many worker processes as it
        takes to keep ``per_process`` or fewer in each (one process's GIL is the limit
        past that); each process runs ``spare`` more pool threads than its fetch cap, so
        that parsing, saving and hand-off overlap other units' fetches (Scrapy's
        CONCURRENT_REQUESTS caps requests the same way)."""
        workers = math.ceil(concurrency / per_process)
        cap = math.ceil(concurrency / workers)
        return cls(workers, pool, math.ceil(cap * (1 + spare)), 1, cap)

    @classmethod
    def for_concurrency(cls, concurrency: int, workers: int, pool: str,
                        worker_concurrency: int) -> Layout:
        """Spread ``concurrency`` in-flight fetches over every pool process's unit threads,
        capped per process (a threads pool's tasks share their process's unit threads)."""
        processes = workers * (worker_concurrency if pool == "prefork" else 1)
        share = max(1, math.ceil(concurrency / processes))
        return cls(workers, pool, worker_concurrency, share, share)


@dataclass
class RunResult:
    """One measured crawl: pages, seconds, CPU seconds of every process involved."""

    crawler: str
    pages: int
    items: int
    crawl_s: float
    cpu_s: float
    peak_rss_mb: float
    extra: dict[str, Any] = field(default_factory=dict)

    def record(self) -> dict[str, Any]:
        return {"crawler": self.crawler, "pages": self.pages, "items": self.items,
                "crawl_s": round(self.crawl_s, 3), "cpu_s": round(self.cpu_s, 3),
                "pages_per_s": round(self.pages / self.crawl_s, 1),
                "pages_per_cpu_s": round(self.pages / self.cpu_s, 1),
                "peak_rss_mb": self.peak_rss_mb, **self.extra}


class Cluster:
    """redis-server and the workers in ``workdir``, for one run."""

    def __init__(self, workdir: Path, base_url: str, layout: Layout,
                 log_level: str = "WARNING", extra_env: dict[str, str] | None = None,
                 queues: str = "properties", profile_dir: Path | None = None) -> None:
        self.workdir = workdir
        self.base_url = base_url
        self.layout = layout
        self.queues = queues
        self.profile_dir = profile_dir  # set: workers sample their CPU by stack there
        self.log_level = log_level
        self.socket = workdir / "redis.sock"
        self.env = local_env(workdir, self.socket, {
            "PROPERTIES_BASE_URL": base_url,
            "TASK_UNIT_THREADS": str(layout.unit_threads),
            "TASK_MAX_FETCHES": str(layout.max_fetches),
            **(extra_env or {}),
        })
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self._runtime: Runtime | None = None

    def start(self, workers: bool = True) -> Cluster:
        """redis-server, then (``workers``) the workers, once they answer a ping."""
        (self.workdir / "redis").mkdir(parents=True, exist_ok=True)
        self.procs["redis"] = self._spawn("redis", embedded_redis.command(
            self.workdir / "redis", self.socket))
        embedded_redis.wait_ready(self.socket, self.procs["redis"])
        return self.start_workers() if workers else self

    def start_workers(self) -> Cluster:
        """The layout's workers, once they answer a ping."""
        entry = ["celery"] if self.profile_dir is None else [
            "bench.profiled_worker", str(self.profile_dir)]
        for i in range(self.layout.workers):
            self.procs[f"worker{i}"] = self._spawn(f"worker{i}", [
                sys.executable, "-m", *entry, "-A", "worker", "worker", "-Q", self.queues,
                "--pool", self.layout.pool, "--concurrency", str(self.layout.worker_concurrency),
                "--hostname", f"bench{i}@%h", "--loglevel", self.log_level,
                "--without-mingle", "--without-gossip"])
        self._wait_workers()
        return self

    def _spawn(self, name: str, cmd: list[str]) -> subprocess.Popen[bytes]:
        with (self.workdir / f"{name}.log").open("ab") as log:
            return subprocess.Popen(
                ["timeout", "--kill-after=30", str(MAX_LIFE_S), *cmd], cwd=ROOT, env=self.env,
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)

    def _wait_workers(self, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            dead = [n for n, p in self.procs.items() if p.poll() is not None]
            if dead:
                raise RuntimeError(f"{dead} exited during start-up; see {self.workdir}/*.log")
            if len(self.app.control.ping(timeout=0.5)) >= self.layout.workers:
                return
        raise TimeoutError(f"workers did not answer a ping within {timeout}s")

    @property
    def app(self) -> Celery:
        """The Celery app the launcher sends with (pings)."""
        dispatch = self.runtime.dispatch
        assert isinstance(dispatch, CeleryDispatch)
        return dispatch.app

    @property
    def runtime(self) -> Runtime:
        """Clients built from the cluster's environment, as a launching shell would."""
        if self._runtime is None:
            self._runtime = runtime_for(self.env)
        return self._runtime

    def stop(self) -> None:
        """Workers first (warm shutdown), then redis; KILL the group of any that lingers."""
        for name in sorted(self.procs, key=lambda n: n == "redis"):
            proc = self.procs[name]
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
        if self._runtime is not None:
            self._runtime.store.close()
            self._runtime.redis.close()


def crawl(cluster: Cluster, chain: Chain, roots: list[dict[str, Any]], timeout: float,
          export: Path | None = None,
          settings: Mapping[str, Mapping[str, Any]] | None = None,
          collections: Sequence[str] = ("properties",)) -> RunResult:
    """Launch one job per root and wait for all; every process's CPU over the crawl.

    ``settings``: per-site settings of the launch (a server's ``base_url``); by default
    the properties site's ``base_url`` is the cluster's: a launch fixes its site's
    settings, read from the launcher's own environment, not the workers'.
    ``export`` receives the stored items as JSON lines afterwards (outside the window).
    """
    if settings is None:
        settings = {"properties": {"base_url": cluster.base_url}}
    res = cluster.runtime
    roots_pids = {name: proc.pid for name, proc in cluster.procs.items()}
    res.redis.ping()  # the snapshots' connection is open before the window
    with Watch(roots_pids) as watch:
        before, busy, started = watch.snapshot(), machine_busy_s(), time.monotonic()
        redis_before = RedisSnapshot.take(res.redis)
        launch_cpu = time.thread_time()
        jobs = [job.job_id for job in launch_many(chain, roots, runtime=res, settings=settings)]
        launch_cpu = time.thread_time() - launch_cpu
        polls = wait_finished(res, jobs, timeout)
        redis_after = RedisSnapshot.take(res.redis)
        after, busy, window = watch.snapshot(), machine_busy_s() - busy, \
            time.monotonic() - started
        peak = watch.peak_rss_mb(n for n in roots_pids if n.startswith("worker"))
    cpu = cpu_between(before, after, roots_pids) + launch_cpu
    if export is not None:
        export_items(res, export)
    # the launcher's polls are the benchmark's, not the crawl's: one HGET each
    cost = RedisCost.between(redis_before, redis_after, own_commands=polls,
                             own_round_trips=polls)
    return summarize(res, chain, jobs, cpu, peak, {
        "redis_cpu_s": round(cpu_between(before, after, ["redis"]), 3),
        "launch_cpu_s": round(launch_cpu, 4), "jobs": len(jobs),
        "window_s": round(window, 3), "window_busy_s": round(busy, 3),
        "window_own_cpu_s": round(cpu, 3), "redis": asdict(cost)}, collections)


def export_items(res: Runtime, path: Path) -> None:
    with path.open("w") as out:
        for record in res.store.read("properties"):
            out.write(json.dumps(record["data"]) + "\n")


def wait_finished(res: Runtime, jobs: list[str], timeout: float) -> int:
    """Poll one unfinished job at a time (the poll's Redis CPU stays negligible);
    returns the number of polls (one HGET each)."""
    deadline = time.monotonic() + timeout
    left = list(jobs)
    polls = 0
    while left:
        polls += 1
        if res.ledger.state(left[0]) in (FINISHED, FINISHED_WITH_FAILURES):
            left.pop(0)
            continue
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(left)} of {len(jobs)} jobs unfinished after {timeout}s")
        time.sleep(0.05)
    return polls


def summarize(res: Runtime, chain: Chain, jobs: list[str], cpu_s: float, peak: float,
              extra: dict[str, Any], collections: Sequence[str] = ("properties",)
              ) -> RunResult:
    """Pages are units done (every fetched and parsed page); failures are reported, and
    the requests the ledger counted (a failed page is a request too). Items: what the
    store holds in ``collections`` (the cluster's store is fresh for every run)."""
    metas = [res.ledger.meta(j) for j in jobs]
    counts = [step for j in jobs for step in res.ledger.counts(j).values()]
    crawl_s = (max(float(m["finished_at"]) for m in metas)
               - min(float(m["created_at"]) for m in metas))
    failed = sum(c.get("failed", 0) for c in counts)
    stored = {c: res.store.count(c) for c in collections}
    return RunResult("project", sum(c.get("done", 0) for c in counts), sum(stored.values()),
                     crawl_s, cpu_s, peak,
                     {**extra, "failed": failed, "stored": stored,
                      "requests": sum(c.get("requests", 0) for c in counts),
                      "retried": sum(c.get("retried", 0) for c in counts)})
