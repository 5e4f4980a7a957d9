"""Deep-chain benchmark (issue 17): crawlchain, Scrapy, Crawlee and a plain threaded
crawler on the same forum, alternating, medians.

    python -m bench.chain --json [--runs 3] [--shape large|small] [--crawler NAME ...]
                                 [--profile]

The forum (``sandbox.forum``, ``--shape large`` by default: 22,104 requests, 79,910
items; ``small``: 522 and 2,148) is served by its fast server, started once for the
whole invocation: every page rendered once, served from memory, so the server is not
the bottleneck; its CPU is nobody's and is reported apart (``server_cpu_s``). Four
crawlers crawl all of it, ``--runs`` rounds, each round every crawler once, round
robin, the first crawler rotating each round (drift on this shared machine hits all
alike); a bounded quiet-machine wait precedes each run and other tenants' CPU during
the run is recorded (``foreign_cpu_pct``). Figures are medians over the rounds.

- **project**: crawlchain, a fresh private cluster per run (``bench.crawl_project``):
  the embedded redis-server (broker and state plane on one unix socket, AOF on), one
  Celery worker consuming queue ``forum``, items in SQLite; the chain ``chains.forum``
  launched with the server's ``base_url``. Layout as ``bench.crawl`` lays it out on
  this 2-core machine: one worker, a prefork pool of 2 processes (one per core), 16
  fetches in flight in all (``--concurrency``), i.e. 8 unit threads and at most 8
  fetches per pool process. CPU: the launcher's launch calls, redis-server, the worker
  and its pool children, over the crawl window (the ledger's first job creation to
  its finish). Peak RSS: the largest single process among the workers.
- **scrapy**, **crawlee**, **plain**: the peers of ``bench.forum_peers``, each in its
  own venv, 16 requests in flight. CPU and wall time are the peer's own over its crawl
  (its ``BENCH`` line: from its first request to its last response; start-up is in
  ``process_cpu_s``); peak RSS its process's, sampled from outside as the workers'
  is (``forum_peers.run_peer`` says why not its own ``ru_maxrss``).

Pages are requests answered (404/410 included: every crawler asks each dead thread
once). Every run's stored records are checked: crawlchain's store against
``sandbox.forum.expected`` record by record (and the ledger's request and failure
counts), each peer's JSONL the same way (``forum_peers.check_records``); all crawlers
must hold the same count per collection. A mismatch is in ``items_check`` and makes
the exit code 1.

crawlchain's cost on the shared state plane, per unit (a unit is one request) and per
item, over the crawl window: ``redis_commands_per_unit``, ``redis_round_trips_per_unit``,
``redis_cpu_ms_per_1000_units``, ``broker_messages_per_unit`` and
``redis_units_per_core_s`` (the ceiling one Redis core sets); ``bench.redis_cost``
says how each is counted.

``--profile`` (or ``CHAINBENCH_PROFILE=1``): one more crawlchain crawl after the
rounds, not measured, its phases timed by each thread's CPU clock; its table (message
and broker, fetch, parse, validation, storage, dedup, ledger, publish, ...) is in
``profile`` (``bench.chain_profile``).

Progress goes to stderr; the last line of stdout is the JSON result, also saved with
the raw samples under ``run/bench/results/chain-<time>/``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench import chain_profile, crawl_project, forum_peers
from bench.crawl import Runner, alternate, say
from bench.crawl_project import Cluster, Layout, RunResult
from bench.proctree import machine_busy_s
from bench.properties import bench_dir
from bench.redis_cost import RedisCost
from chains.forum import forum
from external_interface.storage import ItemStore
from sandbox.forum.expected import COLLECTIONS, ForumExpected, expected
from sandbox.forum.world import SHAPES, ForumWorld

CRAWLERS = ("project", "scrapy", "crawlee", "plain")
PEERS = ("scrapy", "crawlee")  # the best Python peers: the targets are against them
FIGURES = ("pages_per_s", "pages_per_cpu_s", "items", "peak_rss_mb")
REDIS_FIGURES = ("redis_commands_per_unit", "redis_round_trips_per_unit",
                 "redis_cpu_ms_per_1000_units", "broker_messages_per_unit",
                 "redis_commands_per_item", "redis_round_trips_per_item",
                 "redis_cpu_ms_per_1000_items", "redis_read_events_per_unit",
                 "redis_units_per_core_s")
TEST = "chain"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.chain", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print only the JSON result on stdout")
    p.add_argument("--runs", type=int, default=3, help="rounds: each crawler once per round")
    p.add_argument("--shape", choices=sorted(SHAPES), default="large", help="forum size")
    p.add_argument("--seed", type=int, default=7, help="the forum's seed")
    p.add_argument("--crawler", action="append", choices=CRAWLERS,
                   help="run only these (repeatable); default: all four")
    p.add_argument("--concurrency", type=int, default=16, help="requests in flight, all crawlers")
    p.add_argument("--workers", type=int, default=1, help="project: worker processes")
    p.add_argument("--pool", default="prefork", help="project: Celery pool")
    p.add_argument("--worker-concurrency", type=int, default=2, help="project: pool size")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds a run may take")
    p.add_argument("--quiet-wait", type=float, default=60.0,
                   help="max seconds to wait for a quiet machine before each run")
    p.add_argument("--profile", action="store_true",
                   default=os.environ.get(chain_profile.ENV, "") not in ("", "0"),
                   help="after the rounds, one crawlchain crawl profiled by phase "
                        "(not measured)")
    args = p.parse_args(argv)
    if args.runs < 1:
        p.error("--runs must be at least 1")
    args.crawler = [c for c in CRAWLERS if c in (args.crawler or CRAWLERS)]
    return args


# -- the runners ---------------------------------------------------------------------
def project_runner(base_url: str, layout: Layout, truth: ForumExpected, timeout: float,
                   profile_dir: Path | None = None) -> Runner:
    """A fresh cluster per run; its store checked against ``truth`` after the window.
    With ``profile_dir``, the worker's pool children time their phases over the crawl
    (``bench.chain_profile``)."""
    settings = {"forum": {"base_url": f"{base_url}/forum"}}

    def run(path: Path) -> RunResult:
        cluster = Cluster(path, base_url, layout, queues="forum", profile_dir=profile_dir)
        try:
            cluster.start()
            if profile_dir is None:
                result = crawl_project.crawl(cluster, forum, [{}], timeout, settings=settings,
                                             collections=COLLECTIONS)
            else:
                consumers = [chain_profile.main_pid(p.pid) for n, p in cluster.procs.items()
                             if n.startswith("worker")]
                start = chain_profile.snapshot(profile_dir)
                consumer_s = -sum(map(chain_profile.process_cpu_s, consumers))
                result = crawl_project.crawl(cluster, forum, [{}], timeout, settings=settings,
                                             collections=COLLECTIONS)
                consumer_s += sum(map(chain_profile.process_cpu_s, consumers))
                children_ns, phases = chain_profile.window(
                    start, chain_profile.snapshot(profile_dir))
                result.extra["profile"] = {"children_ns": children_ns, "phases": phases,
                                           "consumer_s": consumer_s}
            problems = check_store(cluster.runtime.store, truth)
        finally:
            cluster.stop()
        return project_result(result, truth, problems, layout)
    return run


def project_result(result: RunResult, truth: ForumExpected, problems: list[str],
                   layout: Layout) -> RunResult:
    """Pages are requests (as the peers count them); the Redis cost per unit and item."""
    extra = result.extra
    units = result.pages + extra["failed"]  # units finished: one request each
    if extra["requests"] != truth.requests:
        problems.append(f"the ledger counted {extra['requests']} requests, "
                        f"{truth.requests} expected")
    if extra["failed"] != len(truth.failures):
        problems.append(f"{extra['failed']} units failed, {len(truth.failures)} expected "
                        "(the dead threads)")
    result.pages = extra["requests"]
    extra.update(RedisCost(**extra["redis"]).figures(units, result.items),
                 units=units, layout=layout.label, problems=problems)
    return result


def check_store(store: ItemStore, truth: ForumExpected) -> list[str]:
    """What differs between crawlchain's store and the expected records, per collection."""
    problems = []
    for name, records in truth.records.items():
        got = {r["key"]: r["data"] for r in store.read(name)}
        want = {str(k): v for k, v in records.items()}
        if got != want:
            wrong = sum(1 for k, v in want.items() if got.get(k) != v)
            problems.append(f"{name}: {len(got)} stored, {len(want)} expected, "
                            f"{wrong} missing or different")
    return problems


def peer_runner(peer: str, base_url: str, truth: ForumExpected, timeout: float) -> Runner:
    """One peer process per run; its JSONL checked against ``truth`` after the window."""
    def run(path: Path) -> RunResult:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        busy, started = machine_busy_s(), time.monotonic()
        out, outcome = forum_peers.run_peer(peer, base_url, path, timeout)
        wall, busy = time.monotonic() - started, machine_busy_s() - busy
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = outcome.bench
        if not report.get("pages") or not report.get("crawl_s"):
            raise RuntimeError(f"the {peer} peer reported no crawl: {outcome.problems}")
        process_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return RunResult(
            peer, int(report["pages"]), int(report["items"]), float(report["crawl_s"]),
            float(report["cpu_end_s"]) - float(report["cpu_start_s"]),
            outcome.peak_rss_mb,
            {"own_maxrss_mb": report["maxrss_mb"], "process_cpu_s": round(process_cpu, 3),
             "failures": report.get("failures"),
             "window_s": round(wall, 3), "window_busy_s": round(busy, 3),
             "window_own_cpu_s": round(process_cpu, 3), "stored": stored_counts(out),
             "problems": outcome.problems + forum_peers.check_records(out, truth)})
    return run


def stored_counts(out: Path) -> dict[str, int]:
    """Distinct records per collection in a peer's JSONL output."""
    keys: dict[str, set[Any]] = {name: set() for name in COLLECTIONS}
    if out.exists():
        for line in out.read_text(encoding="utf-8").splitlines():
            record = json.loads(line)
            name = record["type"]
            keys.setdefault(name, set()).add(record[forum_peers.KEYS[name]])
    return {name: len(found) for name, found in keys.items()}


# -- the result ----------------------------------------------------------------------
def median_of(records: list[dict[str, Any]], crawler: str, key: str) -> float | None:
    values = [r[key] for r in records if r["crawler"] == crawler and r.get(key) is not None]
    return round(statistics.median(values), 4) if values else None


def figures(records: list[dict[str, Any]], crawler: str) -> dict[str, Any]:
    """The crawler's medians; None for a crawler not run."""
    out: dict[str, Any] = {key: median_of(records, crawler, key) for key in FIGURES}
    if crawler == "project":
        out.update({key: median_of(records, crawler, key) for key in REDIS_FIGURES})
        first = next((r for r in records if r["crawler"] == crawler), None)
        out["redis_top_commands_per_unit"] = (first or {}).get("redis_top_commands_per_unit")
    return out


def ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def ratios(out: dict[str, dict[str, Any]]) -> dict[str, float | None]:
    p = out["project"]
    best_cpu = max((out[c]["pages_per_cpu_s"] or 0 for c in PEERS), default=0) or None
    best_wall = max((out[c]["pages_per_s"] or 0 for c in PEERS), default=0) or None
    return {
        "pages_per_cpu_s_vs_scrapy": ratio(p["pages_per_cpu_s"], out["scrapy"]["pages_per_cpu_s"]),
        "pages_per_cpu_s_vs_crawlee": ratio(p["pages_per_cpu_s"],
                                            out["crawlee"]["pages_per_cpu_s"]),
        "pages_per_s_vs_scrapy": ratio(p["pages_per_s"], out["scrapy"]["pages_per_s"]),
        "pages_per_s_vs_crawlee": ratio(p["pages_per_s"], out["crawlee"]["pages_per_s"]),
        "pages_per_cpu_s_vs_plain": ratio(p["pages_per_cpu_s"], out["plain"]["pages_per_cpu_s"]),
        "pages_per_cpu_s_vs_best_peer": ratio(p["pages_per_cpu_s"], best_cpu),
        "pages_per_s_vs_best_peer": ratio(p["pages_per_s"], best_wall),
    }


def targets(ratios: dict[str, float | None], same_counts: bool) -> dict[str, bool | None]:
    """Issue 17's targets, all in the same run (None: a crawler they need was not run)."""
    def at_least(value: float | None, bound: float) -> bool | None:
        return None if value is None else value >= bound
    return {"pages_per_cpu_s_2x_best_peer": at_least(ratios["pages_per_cpu_s_vs_best_peer"], 2),
            "pages_per_s_2x_best_peer": at_least(ratios["pages_per_s_vs_best_peer"], 2),
            "pages_per_cpu_s_half_plain": at_least(ratios["pages_per_cpu_s_vs_plain"], 0.5),
            "same_counts": same_counts}


def items_check(records: list[dict[str, Any]], truth: ForumExpected) -> dict[str, Any]:
    """Every run's per-collection counts, the expected ones, and what did not match."""
    want = truth.counts()
    counts: dict[str, list[dict[str, int]]] = {r["crawler"]: [] for r in records}
    problems: dict[str, list[str]] = {}
    for r in records:
        counts[r["crawler"]].append(r["stored"])
        said = list(r["problems"])
        if r["stored"] != want:
            said.append(f"stored {r['stored']}, expected {want}")
        if not r["complete"]:
            said.append(f"{r['pages']} pages answered, {truth.requests} expected")
        if said:
            problems.setdefault(r["crawler"], []).extend(said)
    distinct = {json.dumps(c, sort_keys=True) for runs in counts.values() for c in runs}
    return {"expected": want, "expected_requests": truth.requests,
            "same_counts": len(distinct) == 1 and not problems,
            "counts": counts, "problems": problems}


def result(args: argparse.Namespace, records: list[dict[str, Any]], truth: ForumExpected,
           profile: dict[str, Any] | None) -> dict[str, Any]:
    out = {crawler: figures(records, crawler) for crawler in CRAWLERS}
    server = [r["server_cpu_s"] for r in records]
    against, check = ratios(out), items_check(records, truth)
    return {**out, "ratios": against, "targets": targets(against, check["same_counts"]),
            "items_check": check,
            "server_cpu_s_median": round(statistics.median(server), 3) if server else None,
            "profile": profile,
            "config": {k: v for k, v in vars(args).items() if k != "json"},
            "runs": records}


# -- the run -------------------------------------------------------------------------
def profiled(args: argparse.Namespace, base_url: str, layout: Layout, truth: ForumExpected,
             served: forum_peers.FastServer, results: Path) -> dict[str, Any]:
    """One crawlchain crawl with its phases timed, after the rounds: the per-phase CPU
    table (``bench.chain_profile``)."""
    say("profile: one crawlchain crawl, its phases timed (not measured)")
    outdir = results / "profile"
    outdir.mkdir(parents=True, exist_ok=True)
    runner = project_runner(base_url, layout, truth, args.timeout, outdir)
    record = alternate("profile", {"project": runner}, 1, served, args.quiet_wait,
                       truth.requests)[0]
    measured = record.pop("profile")
    workers_cpu = record["cpu_s"] - record["redis_cpu_s"] - record["launch_cpu_s"]
    table = chain_profile.table(measured["children_ns"], measured["phases"],
                                measured["consumer_s"], record["redis_cpu_s"],
                                record["pages"], record["items"], workers_cpu)
    table.update(measured_workers_cpu_s=round(workers_cpu, 3), crawl_s=record["crawl_s"],
                 pages_per_s=record["pages_per_s"], problems=record["problems"])
    for phase, row in table["by_phase"].items():
        say(f"  {phase:>15}: {row['share_pct']:5.1f} %  {row['ms_per_page']:.3f} ms/page")
    return table


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    truth = expected(ForumWorld.build(args.seed, SHAPES[args.shape]))
    for peer in args.crawler:
        if peer != "project":
            forum_peers.ensure_venv(peer)
    results = bench_dir() / "results" / f"chain-{time.strftime('%Y%m%d-%H%M%S')}"
    results.mkdir(parents=True, exist_ok=True)
    layout = Layout.for_concurrency(args.concurrency, args.workers, args.pool,
                                    args.worker_concurrency)
    lifetime = (args.runs * len(args.crawler) + 1) * (args.timeout + args.quiet_wait + 60)
    say(f"forum {args.shape}: {truth.requests} requests, {truth.items} items {truth.counts()}")
    with forum_peers.fast_server(args.shape, args.seed, lifetime) as served:
        runners: dict[str, Runner] = {
            c: project_runner(served.url, layout, truth, args.timeout) if c == "project"
            else peer_runner(c, served.url, truth, args.timeout) for c in args.crawler}
        records = alternate(TEST, runners, args.runs, served, args.quiet_wait, truth.requests)
        profile = profiled(args, served.url, layout, truth, served, results) \
            if args.profile else None
    out = result(args, records, truth, profile)
    (results / "result.json").write_text(json.dumps(out, indent=1))
    say(f"results in {results}")
    if not args.json:
        for name in (*CRAWLERS, "ratios"):
            print(f"{name:8} {out[name]}")
        print(f"items_check {out['items_check']['same_counts']} "
              f"{out['items_check']['problems']}")
    print(json.dumps(out))
    return 0 if out["items_check"]["same_counts"] else 1


if __name__ == "__main__":
    sys.exit(main())
