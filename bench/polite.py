"""``./control.sh bench polite [--json]``: the open web's defaults against ordinary defences.

The polite shop (``sandbox.polite``: a token bucket of 50 requests/s per client
with 429 + Retry-After past it, 10 % of URLs answering 503 on their first ask, a
User-Agent check) serves a chain of 1,581 requests (index, 80 category pages,
1,500 items). ``sites/polite`` crawls it with no politeness and no header setting:
the default browser headers pass the agent check and the cluster-wide adaptive
throttle finds the rate. The figures, from one run on a fresh cluster (embedded
redis-server, one Celery worker of two processes) and a fresh server:

    elapsed_s       the job, from its creation to its finish (the ledger's clock)
    requests        the chain's distinct URLs (``chain_requests``)
    floor_s         requests / 50: what the server's rate allows
    ratio_to_floor  elapsed_s / floor_s; the goal is at most 1.25
    status_429      429 answers the server gave (goal: at most 10 % of requests)
    status_503      503 answers (its reproducible failures: retried, then served)
    exact           the job finished, nothing failed, and the stored items are
                    exactly the catalogue's

Then the cost of the throttle where nothing defends: the same chain against the
same server with ``--no-defences``, alternately with the throttle on and off
(``THROTTLE_ENABLED``), ``--runs`` times each, a fresh cluster each time: the
medians' ratio (``undefended.ratio``) should be at most 1.10. The last line is JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import report
from bench.crawl_project import Cluster, Layout
from bench.proctree import wait_quiet
from bench.properties import bench_dir
from chains.polite import polite
from chains.runtime.launch import launch
from sandbox.polite.catalogue import Shape, chain_requests, expected_records

ROOT = Path(__file__).resolve().parent.parent
RATE = 50.0  # the server's token bucket, per client address
LAYOUT = Layout(workers=1, pool="prefork", worker_concurrency=2, unit_threads=10)
GOALS = {"ratio_to_floor": 1.25, "share_429": 0.10, "undefended_ratio": 1.10}


@dataclass
class Served:
    """``python -m sandbox.polite`` as a child process, bounded in life."""

    url: str
    proc: subprocess.Popen[str]

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/_sandbox/stats", timeout=5) as answer:
            return dict(json.loads(answer.read()))

    def statuses(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for client in self.stats()["clients"].values():
            for status, n in client["by_status"].items():
                out[int(status)] = out.get(int(status), 0) + int(n)
        return out

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()


def serve(defences: bool, max_seconds: float = 1800.0, shape: Shape | None = None) -> Served:
    """The polite site on a free port, with or without its defences, once listening."""
    cmd = [sys.executable, "-m", "sandbox.polite", "--max-seconds", str(max_seconds)]
    if shape is not None:
        cmd += ["--categories", str(shape.categories), "--items", str(shape.items_per_category)]
    proc = subprocess.Popen(cmd + ([] if defences else ["--no-defences"]), cwd=ROOT,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None
    line = proc.stdout.readline().split()
    if not line:
        proc.wait(timeout=10)
        raise RuntimeError(f"the polite site exited with {proc.returncode} before listening")
    return Served(line[0].rstrip("/"), proc)


def crawl_once(workdir: Path, url: str, throttle: bool, timeout: float,
               shape: Shape | None = None) -> dict[str, Any]:
    """One job of the polite chain on a fresh cluster: its time and whether it is exact."""
    cluster = Cluster(workdir, url, LAYOUT, extra_env={
        "THROTTLE_ENABLED": "1" if throttle else "0"}, queues="polite")
    try:
        cluster.start()
        rt = cluster.runtime
        job = launch(polite, {}, runtime=rt, settings={"polite": {"base_url": url}})
        status = job.wait(timeout=timeout)
        meta = rt.ledger.meta(job.job_id)
        stored = sorted((r["data"] for r in rt.store.read("products")), key=lambda r: r["id"])
        return {"elapsed_s": round(float(meta["finished_at"]) - float(meta["created_at"]), 3),
                "state": status["state"], "failed": status["totals"]["failed"],
                "retried": status["totals"]["retried"],
                "unit_requests": status["totals"]["requests"],
                "exact": status["state"] == "finished" and not status["failures"]
                and stored == expected_records(shape=shape)}
    finally:
        cluster.stop()


def defended(workdir: Path, timeout: float) -> dict[str, Any]:
    """The measured run against the defended site."""
    served = serve(defences=True)
    try:
        run = crawl_once(workdir / "defended", served.url, True, timeout)
        statuses = served.statuses()
    finally:
        served.stop()
    requests = chain_requests()
    floor = requests / RATE
    return {**run, "requests": requests, "floor_s": round(floor, 3),
            "ratio_to_floor": round(run["elapsed_s"] / floor, 3),
            "status_429": statuses.get(429, 0), "status_503": statuses.get(503, 0),
            "server_requests": sum(statuses.values()), "server_statuses": statuses}


def undefended(workdir: Path, runs: int, timeout: float) -> dict[str, Any]:
    """The throttle's cost where nothing defends: medians of alternate runs, on and off."""
    times: dict[str, list[float]] = {"on": [], "off": []}
    served = serve(defences=False)
    try:
        for n in range(runs):
            for mode in ("on", "off") if n % 2 == 0 else ("off", "on"):
                run = crawl_once(workdir / f"undefended-{mode}-{n}", served.url, mode == "on",
                                 timeout)
                if not run["exact"]:
                    raise RuntimeError(f"the undefended crawl (throttle {mode}) was not "
                                       f"exact: {run}")
                times[mode].append(run["elapsed_s"])
    finally:
        served.stop()
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    return {"throttle_on_s": round(on, 3), "throttle_off_s": round(off, 3),
            "ratio": round(on / off, 3), "runs": runs, "times": times}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.polite", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", type=int, default=3, help="undefended runs per throttle mode")
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per job")
    p.add_argument("--quiet-wait", type=float, default=60.0,
                   help="wait up to this long for a quiet machine first")
    p.add_argument("--json", action="store_true")
    args = p.parse_args(argv)
    workdir = bench_dir() / "polite" / time.strftime("%Y%m%d-%H%M%S")
    waited = wait_quiet(max_wait_s=args.quiet_wait) if args.quiet_wait else 0.0
    result = defended(workdir, args.timeout)
    result["undefended"] = undefended(workdir, args.runs, args.timeout)
    share = result["status_429"] / result["requests"]
    result["goals"] = GOALS
    result["met"] = bool(result["exact"] and result["ratio_to_floor"] <= GOALS["ratio_to_floor"]
                         and share <= GOALS["share_429"]
                         and result["undefended"]["ratio"] <= GOALS["undefended_ratio"])
    result["quiet_wait_s"] = waited
    report(result, args.json)
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
