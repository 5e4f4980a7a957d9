"""Crawl benchmark: this project against a tuned Scrapy spider on the same loopback site.

    python -m bench.crawl --json [--runs 3] [--n 10000] [--quick]

Throughput: the properties site of ``--n`` details (``--n``/30 index pages) served
by nginx; each crawler crawls all of it, runs alternating (the first crawler of a
round alternates too, so drift on this shared machine hits both alike). Latency:
the 1,667 index pages of the 50,000-detail site behind the latency server (0.25 s
per response), index pages only, started from sharded start URLs, at each
``--latency-concurrency`` (the project with its adaptive throttle and robots.txt
off: a fixed concurrency and no robots.txt round trip first, as the peer's);
efficiency = pages/s / (concurrency / latency). N pages in waves of C cannot beat
``bound = N / (ceil(N / C) x C)`` (the last wave runs part full: 1,667 pages at
C = 64 take 27 waves, bound 0.965), so each crawler also gets
``latency_bound_cC`` and ``latency_vs_bound_cC`` = efficiency / bound.
Shards: 1.25 x concurrency (the book's 20 at 16) unless ``--shards`` fixes them:
20 start URLs give at most 20 requests in flight, so at concurrency 64 any crawler
would be capped at 20/64 of the bound by the test's shape, not by itself.

Rate limit: the project's crawl of a small site limited to ``--rate`` requests/s by
the cluster-wide limiter, on two worker processes, measured at the server
(``bench.crawl_rate``).

Concurrency: Scrapy gets ``CONCURRENT_REQUESTS`` = ``..._PER_DOMAIN`` = C. The
project gets the same C as fetch threads: ``--workers`` x ``--worker-concurrency``
prefork processes, each fetching a batch's units on C / processes threads
(``TASK_UNIT_THREADS``); in the latency test (one unit per message) threads pools
(``--latency-pool``) capped at C fetches in flight in all (``TASK_MAX_FETCHES``,
at most 16 per worker process), each with a quarter more threads, so that a unit's
parse and hand-off overlap other units' fetches, as Scrapy's requests do. Sharded
starts are launched together (``launch_many``).

Figures are medians over ``--runs``. pages/CPU-s counts every process that
crawls, over the crawl (see ``crawl_project`` and ``crawl_scrapy``); the servers
(nginx, latency server) are neither side's and are reported apart, as is other
tenants' CPU during each run (``foreign_cpu_pct``). Progress goes to stderr; the
last line of stdout is the JSON result, also saved under ``run/bench/results/``.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Protocol

import psutil

from bench import crawl_project, crawl_rate, crawl_scrapy
from bench.crawl_project import Cluster, Layout, RunResult
from bench.proctree import Watch, cpu_between, wait_quiet
from bench.properties import bench_dir, servers
from bench.properties.gen_site import ensure_site, index_pages
from chains.properties import index_chain, properties_chain, shard_params
from chains.runtime.model import Chain

Runner = Callable[[Path], RunResult]
FIGURES = ("pages_per_cpu_s", "pages_per_s")


class Served(Protocol):
    """A server the benchmark started: its CPU is nobody's, reported apart."""

    @property
    def pid(self) -> int: ...


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.crawl", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print only the JSON result on stdout")
    p.add_argument("--runs", type=int, default=3, help="measured runs of each crawler, each test")
    p.add_argument("--n", type=int, default=10_000, help="detail pages of the throughput site")
    p.add_argument("--quick", action="store_true", help="smoke test: 1 run, small sites")
    p.add_argument("--crawl-concurrency", type=int, default=16,
                   help="throughput test: requests in flight, both crawlers")
    p.add_argument("--workers", type=int, default=1, help="project: worker processes")
    p.add_argument("--pool", default="prefork", help="project: Celery pool for throughput")
    p.add_argument("--worker-concurrency", type=int, default=2, help="project: pool size")
    p.add_argument("--detail-batch", type=int, default=50, help="project: units per message")
    p.add_argument("--latency", type=float, default=0.25, help="seconds per response")
    p.add_argument("--latency-n", type=int, default=50_000, help="site size of the latency test")
    p.add_argument("--latency-concurrency", default="16,64", help="comma-separated; '' skips")
    p.add_argument("--latency-pool", default="threads", help="project: pool of the latency test")
    p.add_argument("--no-throughput", action="store_true", help="run the latency test only")
    p.add_argument("--shards", type=int, help="fixed start URLs of the latency test")
    p.add_argument("--rate", type=float, default=20.0,
                   help="requests/s of the rate-limit test (two worker processes); 0 skips")
    p.add_argument("--rate-n", type=int, default=390,
                   help="detail pages of the rate-limit test's site (about 20 s at 20/s)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds a run may take")
    p.add_argument("--quiet-wait", type=float,
                   help="max seconds to wait for a quiet machine before a run (60; quick 5)")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.n, args.latency_n, args.rate_n = 1, 600, 3000, 120
    if args.quiet_wait is None:
        args.quiet_wait = 5.0 if args.quick else 60.0
    return args


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- one measured run ----------------------------------------------------------------
@contextmanager
def workdir(label: str) -> Iterator[Path]:
    """A short-lived directory (a unix socket path must stay short); kept if the run failed."""
    path = Path(tempfile.mkdtemp(prefix=f"ccb-{label}-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def measured(label: str, runner: Runner, server: Served, quiet_wait: float,
             expected: int) -> dict[str, Any]:
    """Run once after a bounded quiet wait; add server CPU, other tenants' CPU and
    whether every page of the site was crawled (``complete``)."""
    waited = wait_quiet(max_wait_s=quiet_wait)
    with workdir(label) as path, Watch({"server": server.pid}, interval=1.0) as watch:
        before = watch.snapshot()
        result = runner(path)
        server_cpu = cpu_between(before, watch.snapshot(), ["server"])
    window = result.extra.pop("window_s")
    foreign = (result.extra.pop("window_busy_s") - result.extra.pop("window_own_cpu_s")
               - server_cpu) / window / (psutil.cpu_count() or 1) * 100
    record = {"test": label, **result.record(), "server_cpu_s": round(server_cpu, 3),
              "foreign_cpu_pct": round(max(0.0, foreign), 1), "quiet_wait_s": waited,
              "complete": result.pages == expected}
    say("  " + "  ".join(f"{k}={v}" for k, v in record.items()))
    if not record["complete"]:
        say(f"  !! {result.crawler} crawled {result.pages} of {expected} pages")
    return record


def project_runner(base_url: str, layout: Layout, chain: Chain, roots: list[dict[str, Any]],
                   timeout: float, export: Path | None = None,
                   extra_env: dict[str, str] | None = None) -> Runner:
    """A fresh cluster per run; the first run's items go to ``export`` if given."""
    def run(path: Path) -> RunResult:
        cluster = Cluster(path, base_url, layout, extra_env=extra_env)
        try:
            cluster.start()
            first = export is not None and not export.exists()
            result = crawl_project.crawl(cluster, chain, roots, timeout,
                                         export if first else None)
        finally:
            cluster.stop()
        result.extra["layout"] = layout.label
        return result
    return run


def scrapy_runner(base_url: str, concurrency: int, timeout: float, shards: int = 1,
                  pages: int = 0, export: Path | None = None) -> Runner:
    """One spider process per run; the first run's items go to ``export`` if given."""
    def run(path: Path) -> RunResult:
        cmd = crawl_scrapy.command(base_url, concurrency, path / "items.jsonl", shards, pages)
        result = crawl_scrapy.crawl(cmd, path, timeout)
        if export is not None and not export.exists():
            shutil.copyfile(path / "items.jsonl", export)
        return result
    return run


def alternate(label: str, runners: dict[str, Runner], runs: int, server: Served,
              quiet_wait: float, expected: int) -> list[dict[str, Any]]:
    """``runs`` rounds; each round runs every crawler once, round robin, the first one
    rotating each round (with two crawlers: A B, B A, A B, ...)."""
    records = []
    order = list(runners)
    for i in range(runs):
        say(f"{label}: round {i + 1}/{runs}")
        shift = i % len(order)
        for name in order[shift:] + order[:shift]:
            records.append(measured(label, runners[name], server, quiet_wait, expected))
    return records


# -- the tests -----------------------------------------------------------------------
def throughput(args: argparse.Namespace, items: Path) -> list[dict[str, Any]]:
    """The whole site behind nginx; the first run of each crawler exports its items."""
    site = ensure_site(args.n)
    layout = Layout.for_concurrency(args.crawl_concurrency, args.workers, args.pool,
                                    args.worker_concurrency)
    chain = properties_chain(args.detail_batch)
    with servers.nginx(site) as web:
        runners = {
            "project": project_runner(web.url, layout, chain, [{"page": 0}], args.timeout,
                                      items / "project.jsonl"),
            "scrapy": scrapy_runner(web.url, args.crawl_concurrency, args.timeout,
                                    export=items / "scrapy.jsonl"),
        }
        return alternate("throughput", runners, args.runs, web, args.quiet_wait,
                         args.n + index_pages(args.n))


def same_items(project: Path, scrapy: Path) -> dict[str, int]:
    """Both crawlers' items, by URL, field by field: the same work was measured."""
    ours = {d["url"]: d for d in map(json.loads, project.read_text().splitlines())}
    peer = {d["url"]: d for d in map(json.loads, scrapy.read_text().splitlines())}
    fields = ("title", "price", "description", "address", "image")
    differ = sum(any(ours[u][f] != peer[u][f] for f in fields) for u in ours.keys() & peer)
    return {"project_items": len(ours), "scrapy_items": len(peer),
            "only_one_side": len(ours.keys() ^ peer.keys()), "field_mismatches": differ}


def latency(args: argparse.Namespace, concurrency: int) -> list[dict[str, Any]]:
    """Index pages only behind the latency server; a pool of ``concurrency`` slots."""
    site = ensure_site(args.latency_n, index_only=True)
    pages = index_pages(args.latency_n)
    shards = args.shards or max(20, round(1.25 * concurrency))
    layout = Layout.for_latency(concurrency, args.latency_pool)
    roots = shard_params(pages, shards)
    label = f"latency_c{concurrency}"
    with servers.latency_server(site, latency=args.latency) as slow:
        runners = {
            # At a fixed concurrency and without robots.txt, as the peer runs (Scrapy's
            # AutoThrottle and ROBOTSTXT_OBEY are off by default): the adaptive throttle's
            # slow start would cost its first round trips, robots.txt one more before any.
            "project": project_runner(slow.url, layout, index_chain(), roots, args.timeout,
                                      extra_env={"THROTTLE_ENABLED": "false",
                                                 "ROBOTS_OBEY": "false"}),
            "scrapy": scrapy_runner(slow.url, concurrency, args.timeout, shards, pages),
        }
        records = alternate(label, runners, args.runs, slow, args.quiet_wait, pages)
    best = concurrency / args.latency
    bound = wave_bound(pages, concurrency)
    for r in records:
        efficiency = r["pages_per_s"] / best
        r.update(shards=shards, efficiency=round(efficiency, 4), bound=round(bound, 4),
                 vs_bound=round(efficiency / bound, 4))
    return records


def wave_bound(pages: int, concurrency: int) -> float:
    """The best efficiency ``pages`` requests can reach ``concurrency`` at a time at a
    fixed latency: ``ceil(N / C)`` waves of C slots, the last one part empty."""
    return pages / (math.ceil(pages / concurrency) * concurrency)


# -- the result ----------------------------------------------------------------------
def median_of(records: list[dict[str, Any]], crawler: str, test: str, key: str) -> float | None:
    values = [r[key] for r in records if r["crawler"] == crawler and r["test"] == test]
    return round(statistics.median(values), 4) if values else None


def figures(records: list[dict[str, Any]], crawler: str,
            concurrencies: list[int]) -> dict[str, float | None]:
    out = {key: median_of(records, crawler, "throughput", key) for key in FIGURES}
    for c in concurrencies:
        test = f"latency_c{c}"
        out[f"latency_efficiency_c{c}"] = median_of(records, crawler, test, "efficiency")
        out[f"latency_bound_c{c}"] = median_of(records, crawler, test, "bound")
        out[f"latency_vs_bound_c{c}"] = median_of(records, crawler, test, "vs_bound")
    out["peak_rss_mb"] = median_of(records, crawler, "throughput", "peak_rss_mb")
    return out


def rate_limited(args: argparse.Namespace) -> dict[str, Any]:
    """The project's crawl of a site limited to ``--rate``/s on two worker processes,
    measured at the server (see ``bench.crawl_rate``)."""
    say(f"rate limit: {args.rate}/s, {args.rate_n} details")
    with workdir("rate") as path:
        figures = crawl_rate.measure(path, args.rate, args.rate_n, args.timeout)
    say("  " + "  ".join(f"{k}={v}" for k, v in figures.items()))
    return figures


def result(args: argparse.Namespace, records: list[dict[str, Any]], concurrencies: list[int],
           check: dict[str, int], rate_limit: dict[str, Any]) -> dict[str, Any]:
    project, scrapy = (figures(records, c, concurrencies) for c in ("project", "scrapy"))
    ratios = {k: round(p / s, 3) if (p := project[k]) and (s := scrapy[k]) else None
              for k in FIGURES}
    config = {k: v for k, v in vars(args).items() if k != "json"}
    return {"project": project, "scrapy": scrapy, "ratios": ratios,
            "rate_limit": rate_limit, "items_check": check, "config": config,
            "runs": records}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    concurrencies = [int(c) for c in args.latency_concurrency.split(",") if c.strip()]
    servers.ensure_nginx()
    crawl_scrapy.ensure_venv()
    results = bench_dir() / "results" / f"crawl-{time.strftime('%Y%m%d-%H%M%S')}"
    results.mkdir(parents=True, exist_ok=True)
    records, check = [], {}
    if not args.no_throughput:
        records = throughput(args, results)
        check = same_items(results / "project.jsonl", results / "scrapy.jsonl")
    for c in concurrencies:
        records += latency(args, c)
    rate_limit = rate_limited(args) if args.rate else {}
    out = result(args, records, concurrencies, check, rate_limit)
    (results / "result.json").write_text(json.dumps(out, indent=1))
    if not args.json:
        for name in ("project", "scrapy", "ratios"):
            print(f"{name:8} {out[name]}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
