"""``./control.sh bench generic [--json]``: the generic crawl against Scrapy and Crawlee.

The generic site at its benchmark size (``sandbox.generic``: 561 pages to depth 3 with
its sitemap's orphans, four index pages of 20,000 links each, about 91,000 links in
all, robots.txt with a Disallow and a gzip sitemap behind an index) is crawled from
``/`` to depth 3, each crawler alone against a fresh server of it, by:

    cold     crawlchain's generic crawl (``launch_crawl``), no site code, on a fresh
             cluster (the embedded redis-server and one Celery worker of two processes,
             just started), its first job
    project  the same crawl again, a second job on the same (now warm) cluster
    scrapy   a CrawlSpider with a LinkExtractor (``bench/scrapy_peer/generic_spider.py``)
    crawlee  a ParselCrawler with ``enqueue_links`` (``bench/crawlee_peer/generic_crawler.py``)
    wget     ``wget --mirror --level=DEPTH`` (robots.txt obeyed, one connection, no
             sitemap: its page set lacks the sitemap's orphans): ``pages``, ``wall_s``

each obeying robots.txt and reading the sitemaps, 16 requests in flight for the peers.
Every crawler's page set (status-200 records) is compared with the site's own
expectation (``sandbox.generic.expected``): the same for all three, or the run fails.

Figures per crawler: ``pages``; ``wall_s``, the crawl's window (the project: from the
launch, robots.txt and sitemap discovery included, to the ledger's finish; a peer:
its first request to its end); ``cpu_s``, the CPU of every process that crawls in that
window (the project: redis-server, the worker and its pool children, the launcher's
own thread; a peer: its process). The site's server is a process of its own, in no
figure. ``ratios``: the warm and the cold crawl's wall and CPU over the better peer's
(``wall_vs_best_peer``, ``cpu_vs_best_peer``, ``cold_wall_vs_best_peer``,
``cold_cpu_vs_best_peer``; goal at most 0.5 each) and the cold crawl's wall over wget's
(``cold_wall_vs_wget``; goal at most 1). ``--busy``: a CPU-bound process spins on one
core beside every crawl (ended with them, bounded by ``--timeout`` per crawler), as on
a shared machine. ``load_average`` is the machine's at the start. The last line is JSON.

``--hostile``: the stall index instead, against Scrapy (``bench/hostile.py``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench import hostile, report
from bench.crawl_project import Cluster, Layout, wait_finished
from bench.generic_peers import (
    PEERS,
    ServedSite,
    compare,
    figures,
    page_set,
    run_peer,
    serve_site,
)
from bench.proctree import Watch, cpu_between, machine_busy_s, wait_quiet
from bench.properties import bench_dir
from chains.cluster import launch_crawl
from sandbox.generic.expected import expected_records

LAYOUT = Layout(workers=1, pool="prefork", worker_concurrency=2, unit_threads=8)
GOAL = 0.5
CRAWLERS = ("project", *PEERS, "wget")


def crawl_project(workdir: Path, size: str, depth: int, timeout: float
                  ) -> tuple[dict[str, Any], dict[str, Any]]:
    """The generic crawl twice on one fresh cluster against a fresh server: the cold crawl
    (a fresh stack, a new job, workers just started) and then the warm one (a second job
    on the same workers); each one's figures and comparison."""
    served = serve_site(size)
    cluster = Cluster(workdir, served.url, LAYOUT, queues="crawl")
    try:
        cluster.start()
        cold = one_crawl(cluster, served, size, depth, timeout)
        warm = one_crawl(cluster, served, size, depth, timeout)
        return cold, warm
    finally:
        cluster.stop()
        served.stop()


def one_crawl(cluster: Cluster, served: ServedSite, size: str, depth: int,
              timeout: float) -> dict[str, Any]:
    """One job of the generic crawl on the running cluster: figures and comparison."""
    rt = cluster.runtime
    pids = {name: proc.pid for name, proc in cluster.procs.items()}
    requests_before = served.requests()
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
    records = [r["data"] for r in rt.store.read("pages", job_id=job.job_id)]
    expected = expected_records(served.site, depth)
    return {"pages": len(page_set(records)), "wall_s": round(finished - started, 3),
            "cpu_s": round(cpu_between(before, after, pids) + launch_cpu, 3),
            "redis_cpu_s": round(cpu_between(before, after, ["redis"]), 3),
            "launch_cpu_s": round(launch_cpu, 3), "peak_rss_mb": peak,
            "requests": status["totals"]["requests"], "failed": status["totals"]["failed"],
            "server_requests": served.requests() - requests_before,
            "machine_busy_s": round(busy, 3),
            "comparison": asdict(compare(records, expected))}


def crawl_wget(size: str, depth: int, timeout: float, workdir: Path) -> dict[str, Any]:
    """``wget --mirror`` (robots.txt obeyed, to ``depth``, one connection) alone against a
    fresh server: its pages (HTML files saved) and wall time. It reads no sitemap, so its
    page set lacks the sitemap's orphans."""
    served = serve_site(size)
    out = workdir / "wget"
    shutil.rmtree(out, ignore_errors=True)
    try:
        started = time.monotonic()
        subprocess.run(["wget", "--mirror", f"--level={depth}", "--no-parent", "--quiet",
                        "--no-host-directories", "--directory-prefix", str(out),
                        "--reject-regex", "/_sandbox/", served.url + "/"],
                       timeout=timeout, check=False)
        wall = time.monotonic() - started
        pages = sum(1 for f in out.rglob("*") if f.is_file() and f.name != "robots.txt"
                    and not f.name.endswith((".xml", ".gz")))
        return {"pages": pages, "wall_s": round(wall, 3),
                "server_requests": served.requests()}
    finally:
        served.stop()


@contextmanager
def busy_core(enabled: bool, max_s: float) -> Iterator[None]:
    """With ``enabled``: a CPU-bound process spinning on one core beside the crawls, ended
    after them or after ``max_s`` (whichever first)."""
    if not enabled:
        yield
        return
    spin = subprocess.Popen([sys.executable, "-c", "import time\nend = time.monotonic() + "
                             f"{max_s}\nwhile time.monotonic() < end: pass"])
    try:
        yield
    finally:
        spin.kill()
        spin.wait()


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
    p.add_argument("--busy", action="store_true",
                   help="a CPU-bound process on one core beside every crawl (bounded)")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(given)
    workdir = bench_dir() / "generic" / time.strftime("%Y%m%d-%H%M%S")
    result: dict[str, Any] = {"size": args.size, "depth": args.depth, "busy": args.busy,
                              "load_average": list(os.getloadavg())}
    with busy_core(args.busy, len(CRAWLERS) * args.timeout):
        for name in CRAWLERS:
            if args.quiet_wait and not args.busy:
                wait_quiet(max_wait_s=args.quiet_wait)
            if name == "project":
                result["cold"], result["project"] = crawl_project(
                    workdir / "project", args.size, args.depth, args.timeout)
            elif name == "wget":
                result["wget"] = crawl_wget(args.size, args.depth, args.timeout, workdir)
            else:
                result[name] = crawl_peer(name, args.size, args.depth, args.timeout)
    best_wall = min(result[name]["wall_s"] for name in PEERS)
    best_cpu = min(result[name]["cpu_s"] for name in PEERS)
    project, cold = result["project"], result["cold"]
    result["ratios"] = {"wall_vs_best_peer": round(project["wall_s"] / best_wall, 3),
                        "cpu_vs_best_peer": round(project["cpu_s"] / best_cpu, 3),
                        "cold_wall_vs_best_peer": round(cold["wall_s"] / best_wall, 3),
                        "cold_cpu_vs_best_peer": round(cold["cpu_s"] / best_cpu, 3),
                        "cold_wall_vs_wget": round(cold["wall_s"] / result["wget"]["wall_s"],
                                                   3)}
    result["same_page_sets"] = all(same(result[name]) for name in ("cold", "project", *PEERS))
    ratios = result["ratios"]
    result["met"] = bool(result["same_page_sets"]
                         and max(ratios[k] for k in ratios if k != "cold_wall_vs_wget") <= GOAL
                         and ratios["cold_wall_vs_wget"] <= 1.0)
    report(result, args.json)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
