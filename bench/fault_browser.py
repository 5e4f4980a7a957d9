"""Browser faults: does a crawl in the browser lose or double anything when its Chromium is
killed, or a page never finishes loading, or a page eats memory without end?

    python -m bench.fault_browser --json [--runs 5] [--only SCENARIO ...] [--products N]

Each run starts a fresh cluster (embedded redis-server, one Celery worker: real
processes) and the JavaScript shop (``sandbox.js``) in a thread, launches
``chains/jsshop`` with ``client="browser"`` (every page rendered) and hurts it:

    browser_sigkill    the worker's Chromium (every process of it) SIGKILLed at a random
                       moment while pages are in flight: the pool launches another, the
                       pages' units are retried
    page_never_loads   three product pages carry a script that never arrives the first
                       time they are asked for: the fetch deadline ends each, the unit is
                       retried
    page_hogs_memory   three product pages carry a script that allocates memory without
                       end the first time: the page is read before its tab dies, or the
                       tab's heap cap (``JS_HEAP_MB``) crashes it and the unit is retried;
                       the browsers' memory stays bounded
                       (``peak_browser_mb``, their PSS, under ``BROWSER_RECYCLE_MB`` plus
                       the heap cap)

Measured per run: ``lost`` (products of ``/__expected`` not stored), ``doubled`` (items
the job counted beyond the distinct ones stored), whether the job finished, and no
Chromium left once the worker stopped. The last line is JSON: ``rows``, one per
scenario, its runs summed, ``outcome`` "ok" or "FAIL".
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from bench import report
from bench.crawl_project import Cluster, Layout
from bench.proctree import tree
from bench.properties import bench_dir
from chains.jsshop import jsshop
from chains.runtime.launch import launch
from external_interface.clients.browser_pool import JS_HEAP_MB, MARKER
from sandbox.js.__main__ import serve
from sandbox.js.catalogue import Catalogue
from sandbox.loop_server import LoopServer

LAYOUT = Layout(workers=1, pool="threads", worker_concurrency=2, unit_threads=4,
                max_fetches=4)
ENV = {"FETCH_DEADLINE_S": "6", "POLITE_LEASE_TTL_S": "20", "TASK_MAX_RETRIES": "8",
       "BROWSER_PAGES": "4", "BROWSER_RECYCLE_MB": "1500"}


@dataclass(frozen=True)
class Scenario:
    name: str
    hang: int = 0
    hog: int = 0
    inject: Callable[[Cluster, random.Random], str] | None = None


def chromiums(cluster: Cluster) -> list[psutil.Process]:
    """The cluster's Chromium main processes (the pool's marker on their command line)."""
    found = []
    for pid in [p.pid for p in cluster.procs.values()]:
        for process in tree(pid):
            try:
                line = process.cmdline()
            except psutil.Error:
                continue
            if any(a.startswith(MARKER) for a in line) and not any(
                    a.startswith("--type=") for a in line):
                found.append(process)
    return found


def kill_browser(cluster: Cluster, rng: random.Random) -> str:
    """SIGKILL every process of the worker's Chromium, once it has rendered a while."""
    time.sleep(rng.uniform(2.0, 6.0))
    for _ in range(200):
        mains = chromiums(cluster)
        if mains:
            for main in mains:
                for process in [main, *main.children(recursive=True)]:
                    with suppress(psutil.Error):
                        process.send_signal(signal.SIGKILL)
            return f"killed {len(mains)} browser(s)"
        time.sleep(0.05)
    return "no browser to kill"


SCENARIOS = [Scenario("browser_sigkill", inject=kill_browser),
             Scenario("page_never_loads", hang=3),
             Scenario("page_hogs_memory", hog=3)]


def browser_mb(cluster: Cluster) -> float:
    """The PSS of the cluster's browsers, every process of them (0 for one that just went)."""
    total = 0
    for main in chromiums(cluster):
        with suppress(psutil.Error):
            for process in [main, *main.children(recursive=True)]:
                with suppress(psutil.Error):
                    total += process.memory_full_info().pss
    return total / 2**20


def run_once(scenario: Scenario, seed: int, products: int, workdir: Path,
             timeout: float) -> dict[str, Any]:
    rng = random.Random(seed)
    server: LoopServer = serve(Catalogue(seed, products), hang=scenario.hang,
                               hog=scenario.hog).start_in_thread(max_seconds=timeout + 120)
    cluster = Cluster(workdir, server.url, LAYOUT, queues="jsshop", extra_env=ENV)
    peak = 0.0
    note = ""
    try:
        cluster.start()
        rt = cluster.runtime
        job = launch(jsshop, {}, runtime=rt,
                     settings={"jsshop": {"base_url": server.url, "client": "browser"}})
        stop = threading.Event()

        def watch() -> None:
            nonlocal peak
            while not stop.wait(0.25):
                peak = max(peak, browser_mb(cluster))

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        if scenario.inject is not None:
            note = scenario.inject(cluster, rng)
        try:
            status = job.wait(timeout=timeout)
            state = status["state"]
        except Exception as exc:  # the job did not finish in time: a failed run
            status, state = {"totals": {"items": 0}}, f"unfinished: {exc}"
        stop.set()
        watcher.join(5)
        stored = [int(r["data"]["id"]) for r in rt.store.read("products")]
        expected = {p.id for p in Catalogue(seed, products).products}
        counted = int(status["totals"]["items"])
    finally:
        cluster.stop()
        server.close()
    time.sleep(1.0)
    left = [p.pid for p in psutil.process_iter(["cmdline"])
            if any(str(a).startswith(MARKER) for a in p.info["cmdline"] or ())
            and str(workdir) in " ".join(_environ_paths(p))]
    lost = len(expected - set(stored))
    doubled = max(0, counted - len(set(stored)))
    return {"seed": seed, "state": state, "lost": lost, "doubled": doubled,
            "peak_browser_mb": round(peak, 1), "browsers_left": len(left), "note": note}


def _environ_paths(process: psutil.Process) -> list[str]:
    """The run directory a process was started under (its environment), if readable."""
    try:
        return [v for v in process.environ().values() if "/" in v]
    except psutil.Error:
        return []


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.fault_browser", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--only", nargs="*", default=None)
    p.add_argument("--products", type=int, default=45)
    p.add_argument("--seed", type=int, default=int(time.time()) % 10_000)
    p.add_argument("--timeout", type=float, default=240.0)
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    base = bench_dir() / "fault_browser" / time.strftime("%Y%m%d-%H%M%S")
    rows = []
    bound = int(ENV["BROWSER_RECYCLE_MB"]) + JS_HEAP_MB
    for scenario in SCENARIOS:
        if args.only and scenario.name not in args.only:
            continue
        runs = [run_once(scenario, args.seed + n, args.products,
                         base / f"{scenario.name}-{n}", args.timeout)
                for n in range(args.runs)]
        print(json.dumps({"scenario": scenario.name, "runs": runs}), file=sys.stderr,
              flush=True)
        ok = all(r["lost"] == 0 and r["doubled"] == 0 and r["state"] == "finished"
                 and r["browsers_left"] == 0 for r in runs)
        if scenario.hog:
            ok = ok and all(r["peak_browser_mb"] <= bound for r in runs)
        rows.append({"scenario": scenario.name, "runs": len(runs),
                     "lost": sum(r["lost"] for r in runs),
                     "doubled": sum(r["doubled"] for r in runs),
                     "unfinished": sum(r["state"] != "finished" for r in runs),
                     "browsers_left": sum(r["browsers_left"] for r in runs),
                     "peak_browser_mb": max(r["peak_browser_mb"] for r in runs),
                     "outcome": "ok" if ok else "FAIL"})
    report({"seed": args.seed, "pid": os.getpid(), "rows": rows}, args.json)
    return 0 if all(r["outcome"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
