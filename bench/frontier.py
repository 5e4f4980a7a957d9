"""``./control.sh bench frontier [--units N] [--json]``: a frontier of a million pending units.

A generic crawl (depth 0) is launched with ``--units`` start URLs (1,000,000 by default;
a smaller figure for development) on a fresh cluster whose worker is not started yet,
so every unit stays pending. Measured:

    launch_s                the launch call: the chain planned, every root unit checked,
                            registered in the ledger and published
    bytes_per_pending_unit  what the pending units cost Redis (``used_memory`` after the
                            launch less before), per unit; ``broker`` (the queue's
                            messages and kombu's keys: every key outside the ``cc:``
                            prefix) and ``state`` (the ledger, the tree, dedup: the rest)
                            apart
    peak_rss_mb             the launcher's (this process, ``ru_maxrss``) and the worker's
                            (its processes while they run the job, sampled)

Then one worker (a prefork pool of 2, as ``./control.sh start worker``) is started
against a server that answers every URL with a small page, the job runs to its end, and
``exact`` says whether the ledger finished every unit exactly once and the store holds
one page per unit. ``run_s`` and ``units_per_s`` are the run's. The last line is JSON:
``units``, ``launch_s``, ``bytes_per_pending_unit`` (``total``, ``broker``, ``state``),
``peak_rss_mb`` (``launcher``, ``worker``), ``exact``, ``run_s``, ``units_per_s``.
Goals (the issue's): at most 150 bytes per pending unit, a launch within 60 s.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis

from bench import report
from bench.crawl_project import Cluster, Layout, wait_finished
from bench.proctree import Watch
from bench.properties import bench_dir
from chains.cluster import launch_crawl
from external_interface.keys import PREFIX
from sandbox.loop_server import Incoming, LoopServer, Reply, bind

LAYOUT = Layout(workers=1, pool="prefork", worker_concurrency=2, unit_threads=16)
GOALS = {"bytes_per_pending_unit": 150, "launch_s": 60}
PAGE = b"<!DOCTYPE html><html><head><title>Page</title></head><body>a page</body></html>"


def page(incoming: Incoming) -> Reply:
    """Every URL: the same small page, no links (the frontier is the start URLs)."""
    return Reply(200, PAGE) if incoming.path != "/robots.txt" else Reply(404, b"")


def memory(client: redis.Redis) -> tuple[int, int]:
    """``used_memory``, and the part held by broker keys (outside the project's prefix)."""
    used = int(client.info("memory")["used_memory"])
    broker = 0
    for key in client.scan_iter(count=1000):
        if not key.startswith(f"{PREFIX}:".encode()):
            broker += int(client.memory_usage(key, samples=0) or 0)
    return used, broker


def measure(units: int, timeout: float, workdir: Path) -> dict[str, Any]:
    server = LoopServer([(page, bind())])
    with server:
        base = server.url
        cluster = Cluster(workdir, base, LAYOUT, queues="crawl")
        try:
            cluster.start(workers=False)  # redis only: every unit stays pending
            rt = cluster.runtime
            used_before, broker_before = memory(rt.redis)
            starts = [f"{base}/p/{n}" for n in range(units)]
            started = time.perf_counter()
            job = launch_crawl(starts, max_depth=0, read_sitemaps=False, runtime=rt,
                               workers="off")
            launch_s = time.perf_counter() - started
            del starts
            used_after, broker_after = memory(rt.redis)
            launcher_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
            total = (used_after - used_before) / units
            broker = (broker_after - broker_before) / units
            run_started = time.perf_counter()
            cluster.start_workers()
            pids = {"worker0": cluster.procs["worker0"].pid}
            with Watch(pids) as watch:
                wait_finished(rt, [job.job_id], timeout)
                worker_mb = watch.peak_rss_mb(["worker0"])
            run_s = time.perf_counter() - run_started
            status = job.status()
            stored = sum(1 for _ in rt.store.read("pages", job_id=job.job_id))
            done = status["totals"]["done"]
            return {"units": units, "launch_s": round(launch_s, 3),
                    "bytes_per_pending_unit": {"total": round(total, 1),
                                               "broker": round(broker, 1),
                                               "state": round(total - broker, 1)},
                    "peak_rss_mb": {"launcher": round(launcher_mb, 1), "worker": worker_mb},
                    "exact": bool(done == units == stored and status["totals"]["failed"] == 0),
                    "done": done, "stored": stored, "run_s": round(run_s, 3),
                    "units_per_s": round(units / run_s, 1)}
        finally:
            cluster.stop()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.frontier", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--units", type=int, default=1_000_000, help="start units (pending)")
    p.add_argument("--timeout", type=float, default=7200.0, help="seconds the run may take")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    if args.units < 1:
        p.error("--units must be at least 1")
    workdir = bench_dir() / "frontier" / time.strftime("%Y%m%d-%H%M%S")
    result = measure(args.units, args.timeout, workdir)
    result["goals"] = GOALS
    result["met"] = bool(result["exact"]
                         and result["bytes_per_pending_unit"]["total"]
                         <= GOALS["bytes_per_pending_unit"]
                         and result["launch_s"] <= GOALS["launch_s"])
    report(result, args.json)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
