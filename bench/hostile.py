"""``./control.sh bench generic --hostile [--json]``: a few bad URLs must not stall their host.

The stall index (``sandbox.hostile.stall``: 20 good pages and 20 bad URLs on one host,
four each that hang, drip, loop, answer 500, answer 429 without Retry-After) is crawled
from ``/`` to depth 1, each crawler alone against a fresh server of it (its bad
endpoints hold a connection ``--hold-seconds``, 120 by default), by:

    project  crawlchain's generic crawl (``launch_crawl``) on a fresh cluster, defaults
    scrapy   the generic CrawlSpider (``bench/scrapy_peer/generic_spider.py``) with
             ``DOWNLOAD_TIMEOUT`` 30 and Scrapy's default retries (twice)

Figures per crawler: ``wall_s`` (the project: the launch to the ledger's finish; Scrapy:
its first request to its close), ``good_stored`` (good pages among the stored records).
The project's run also says, per bad URL, whether it failed with its reason
(``bad_failed``, ``bad_with_reason``) and the throttle's state of the host at the end.
``ratios.wall_vs_scrapy``: the goal is at most 1, every good page stored and every bad
URL failed with its reason. ``--pool prefork``: the project on the default worker's
layout instead (two processes, where a message lasts as long as its slowest unit). The
last line is JSON (with the ``layout`` and the ``load_average`` at the start).
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench import proctree, report
from bench.crawl_project import Cluster, Layout, wait_finished
from bench.generic_peers import ROOT, page_set, run_peer
from bench.proctree import Watch, cpu_between
from bench.properties import bench_dir
from chains.cluster import launch_crawl
from sandbox.hostile.stall import BAD, GOOD

# Scrapy's 16 requests in flight: one worker whose threads pool runs 8 messages at once,
# each fetching its units on up to 8 threads, 16 fetches in flight at most (a message
# lasts as long as its slowest unit: on a site that hangs, messages must not queue
# behind two processes' worth of hangs).
LAYOUT = Layout(workers=1, pool="threads", worker_concurrency=8, unit_threads=8, max_fetches=16)
SCRAPY_SETTINGS = {"DOWNLOAD_TIMEOUT": 30}
GOAL = 1.0


class Served:
    """The stall index in its own process (bounded life), once listening."""

    def __init__(self, hold_s: float, max_seconds: float = 1800.0) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sandbox.hostile", "--stall", "--hold-seconds", str(hold_s),
             "--max-seconds", str(max_seconds)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
            start_new_session=True)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().split()
        if not line:
            self.proc.wait(timeout=10)
            raise RuntimeError(f"the stall index exited with {self.proc.returncode}")
        self.url = line[0]

    def stop(self) -> None:
        proctree.stop(self.proc)


def paths(urls: Sequence[str]) -> set[str]:
    return {urlsplit(url).path for url in urls}


def crawl_project(workdir: Path, hold_s: float, timeout: float,
                  layout: Layout = LAYOUT) -> dict[str, Any]:
    """The generic crawl of the stall index on a fresh cluster: wall, CPU, what ended how."""
    served = Served(hold_s)
    cluster = Cluster(workdir, served.url, layout, queues="crawl")
    try:
        cluster.start()
        rt = cluster.runtime
        pids = {name: proc.pid for name, proc in cluster.procs.items()}
        with Watch(pids) as watch:
            before, started = watch.snapshot(), time.time()
            job = launch_crawl([served.url + "/"], max_depth=1, runtime=rt)
            wait_finished(rt, [job.job_id], timeout)
            after = watch.snapshot()
        finished = float(rt.ledger.meta(job.job_id)["finished_at"])
        status = job.status(failures=100)
        failed = {urlsplit(f["params"]["url"]).path: f["reason"] for f in status["failures"]}
        stored = paths([r["key"] for r in rt.store.read("pages", job_id=job.job_id)])
        reasons = {b.path: bool(re.search(b.reason, failed.get(b.path, ""))) for b in BAD}
        bucket = f"crawl:{urlsplit(served.url).netloc}"
        throttle = rt.throttle.state(bucket) if rt.throttle is not None else {}
        return {"wall_s": round(finished - started, 3),
                "cpu_s": round(cpu_between(before, after, pids), 3),
                "good_stored": len(stored & set(GOOD)),
                "bad_failed": len(set(failed) & reasons.keys()),
                "bad_with_reason": sum(reasons.values()),
                "wrong_reasons": {p: failed.get(p, "") for p, ok in reasons.items() if not ok},
                "requests": status["totals"]["requests"], "throttle": throttle}
    finally:
        cluster.stop()
        served.stop()


def crawl_scrapy(hold_s: float, timeout: float) -> dict[str, Any]:
    """Scrapy's CrawlSpider alone against a fresh server of the stall index."""
    served = Served(hold_s)
    try:
        run = run_peer("scrapy", served.url, 1, bench_dir() / "hostile" / "scrapy", timeout,
                       SCRAPY_SETTINGS)
        return {"wall_s": run.crawl_s, "cpu_s": run.crawl_cpu_s,
                "good_stored": len(paths(list(page_set(run.records))) & set(GOOD)),
                "requests": run.requests}
    finally:
        served.stop()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.generic --hostile", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--hold-seconds", type=float, default=120.0,
                   help="how long a hanging or dripping endpoint holds its connection")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per crawler")
    p.add_argument("--peers", default="scrapy", help="'scrapy', or '' for the project alone")
    p.add_argument("--pool", choices=("threads", "prefork"), default=LAYOUT.pool,
                   help="the project worker's pool (prefork: 2 processes, as "
                        "./control.sh start worker, with TASK_UNIT_THREADS 16)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    layout = LAYOUT if args.pool == LAYOUT.pool else Layout(1, "prefork", 2, 16, 0)
    workdir = bench_dir() / "hostile" / time.strftime("%Y%m%d-%H%M%S")
    result: dict[str, Any] = {"good": len(GOOD), "bad": len(BAD),
                              "hold_s": args.hold_seconds, "layout": layout.label,
                              "load_average": list(os.getloadavg())}
    result["project"] = crawl_project(workdir / "project", args.hold_seconds, args.timeout,
                                      layout)
    project = result["project"]
    complete = (project["good_stored"] == len(GOOD)
                and project["bad_with_reason"] == len(BAD))
    result["met"] = complete
    if args.peers:
        result["scrapy"] = crawl_scrapy(args.hold_seconds, args.timeout)
        ratio = project["wall_s"] / result["scrapy"]["wall_s"]
        result["ratios"] = {"wall_vs_scrapy": round(ratio, 3)}
        result["met"] = complete and ratio <= GOAL
    report(result, args.json)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
