"""``./control.sh bench generic [--json]``: the generic crawl against Scrapy and Crawlee.

The generic site at its benchmark size (``sandbox.generic``: 561 pages to depth 3 with
its sitemap's orphans, four index pages of 20,000 links each, about 91,000 links in
all, robots.txt with a Disallow and a gzip sitemap behind an index) is crawled from
``/`` to depth 3, each crawler alone against a fresh server of it, by:

    project  crawlchain's generic crawl (``launch_crawl``), no site code, on a fresh
             cluster: the embedded redis-server and one Celery worker of two processes
    scrapy   a CrawlSpider with a LinkExtractor (``bench/scrapy_peer/generic_spider.py``)
    crawlee  a ParselCrawler with ``enqueue_links`` (``bench/crawlee_peer/generic_crawler.py``)

each obeying robots.txt and reading the sitemaps, 16 requests in flight for the peers.
Every crawler's page set (status-200 records) is compared with the site's own
expectation (``sandbox.generic.expected``): the same for all three, or the run fails.

Figures per crawler: ``pages``; ``wall_s``, the crawl's window (the project: from the
launch, robots.txt and sitemap discovery included, to the ledger's finish; a peer:
its first request to its end); ``cpu_s``, the CPU of every process that crawls in that
window (the project: redis-server, the worker and its pool children, the launcher's
own thread; a peer: its process). The site's server is a process of its own, in no
figure. ``ratios``: the project's wall and CPU over the better peer's; the goal is
at most 0.5 for each. The last line is JSON.

``--hostile``: the stall index instead, against Scrapy (``bench/hostile.py``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import hostile, report
from bench.crawl_project import Cluster, Layout, wait_finished
from bench.generic_peers import PEERS, compare, figures, page_set, run_peer, serve_site
from bench.proctree import Watch, cpu_between, machine_busy_s, wait_quiet
from bench.properties import bench_dir
from chains.cluster import launch_crawl
from sandbox.generic.expected import expected_records

LAYOUT = Layout(workers=1, pool="prefork", worker_concurrency=2, unit_threads=8)
GOAL = 0.5


def crawl_project(workdir: Path, size: str, depth: int, timeout: float) -> dict[str, Any]:
    """The generic crawl on a fresh cluster against a fresh server: figures, comparison."""
    served = serve_site(size)
    cluster = Cluster(workdir, served.url, LAYOUT, queues="crawl")
    try:
        cluster.start()
        rt = cluster.runtime
        pids = {name: proc.pid for name, proc in cluster.procs.items()}
        with Watch(pids) as watch:
            before, busy = watch.snapshot(), machine_busy_s()
            started, launch_cpu = time.time(), time.thread_time()
            job = launch_crawl([served.url + "/"], max_depth=depth, runtime=rt)
            launch_cpu = time.thread_time() - launch_cpu
            wait_finished(rt, [job.job_id], timeout)
            after, busy = watch.snapshot(), machine_busy_s() - busy
            peak = watch.peak_rss_mb(n for n in pids if n.startswith("worker"))
        finished = float(rt.ledger.meta(job.job_id)["finished_at"])
        status = job.status()
        records = [r["data"] for r in rt.store.read("pages")]
        expected = expected_records(served.site, depth)
        return {"pages": len(page_set(records)), "wall_s": round(finished - started, 3),
                "cpu_s": round(cpu_between(before, after, pids) + launch_cpu, 3),
                "redis_cpu_s": round(cpu_between(before, after, ["redis"]), 3),
                "launch_cpu_s": round(launch_cpu, 3), "peak_rss_mb": peak,
                "requests": status["totals"]["requests"], "failed": status["totals"]["failed"],
                "server_requests": served.requests(), "machine_busy_s": round(busy, 3),
                "comparison": asdict(compare(records, expected))}
    finally:
        cluster.stop()
        served.stop()


def crawl_peer(name: str, size: str, depth: int, timeout: float) -> dict[str, Any]:
    """One peer alone against a fresh server: figures and comparison."""
    served = serve_site(size)
    try:
        run = run_peer(name, served.url, depth, bench_dir() / "generic" / name, timeout)
        expected = expected_records(served.site, depth)
        return {**figures(run), "server_requests": served.requests(),
                "comparison": asdict(compare(run.records, expected))}
    finally:
        served.stop()


def same(result: dict[str, Any]) -> bool:
    c = result["comparison"]
    return not (c["missing"] or c["extra"] or c["duplicates"] or c["field_mismatches"])


def main(argv: Sequence[str] | None = None) -> int:
    given = list(sys.argv[1:] if argv is None else argv)
    if "--hostile" in given:  # the stall index against Scrapy: bench/hostile.py
        given.remove("--hostile")
        return hostile.main(given)
    p = argparse.ArgumentParser(prog="python -m bench.generic", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--size", choices=("small", "bench"), default="bench")
    p.add_argument("--depth", type=int, default=3)
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per crawler")
    p.add_argument("--quiet-wait", type=float, default=60.0,
                   help="wait up to this long for a quiet machine before each crawler")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(given)
    workdir = bench_dir() / "generic" / time.strftime("%Y%m%d-%H%M%S")
    result: dict[str, Any] = {"size": args.size, "depth": args.depth}
    for name in ("project", *PEERS):
        if args.quiet_wait:
            wait_quiet(max_wait_s=args.quiet_wait)
        result[name] = (crawl_project(workdir / "project", args.size, args.depth, args.timeout)
                        if name == "project" else
                        crawl_peer(name, args.size, args.depth, args.timeout))
    best_wall = min(result[name]["wall_s"] for name in PEERS)
    best_cpu = min(result[name]["cpu_s"] for name in PEERS)
    result["ratios"] = {"wall_vs_best_peer": round(result["project"]["wall_s"] / best_wall, 3),
                        "cpu_vs_best_peer": round(result["project"]["cpu_s"] / best_cpu, 3)}
    result["same_page_sets"] = all(same(result[name]) for name in ("project", *PEERS))
    result["met"] = bool(result["same_page_sets"]
                         and max(result["ratios"].values()) <= GOAL)
    report(result, args.json)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
