"""Fault injection: does a crawl lose or double anything when its processes are hurt?

    python -m bench.faults --json [--runs 5] [--only SCENARIO ...] [--quick] [--seed N]

Each run starts a fresh local cluster (redis-server with AOF on, the sandbox
site, Celery workers: real processes, loopback and unix sockets only), launches
the demo chain over a small world (a few hundred units, its item keys known in
advance), injects one fault at a seeded random moment (see
``bench.fault_scenarios``), waits for the job to finish (at most
``--drain-timeout`` seconds) and measures lost items (counted by item key),
duplicate items, duplicate executions and the time to drain (see
``bench.fault_measure``).

One row per scenario sums its runs; ``outcome`` is "ok" when no run lost or
doubled an item and none broke the scenario's own checks (an unexpected dead
letter, a job that never finished, a worker that died by itself, a 429 waited
on past the cap), else "FAIL"; ``problems`` says which.
The seed is printed first (stderr) so a failing run can be replayed; the
directory of a failing run (worker and redis logs) is kept and named. With
``--json`` the last stdout line is ``{"seed", "rows": [...]}``; without it, a table.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import sys
import tempfile
import time
import traceback
from collections.abc import Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.fault_measure import RunResult, Trial, measure, wait_finished
from bench.fault_scenarios import SCENARIOS, Scenario
from sandbox.cluster import Cluster
from sandbox.world import World, expected_keys

WORLD = World(seed=5)  # 248 units, 810 items: a run takes seconds, faults land mid-job
QUICK = [s.name for s in SCENARIOS if s.quick]


@dataclass
class Row:
    """One scenario's runs, summed."""

    scenario: str
    results: list[RunResult] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        ok = all(r.ok for r in self.results)
        return {
            "scenario": self.scenario,
            "runs": len(self.results),
            "lost": sum(r.lost for r in self.results),
            "duplicate_items": sum(r.duplicate_items for r in self.results),
            "duplicate_executions": sum(r.duplicate_executions for r in self.results),
            "worst_drain_s": max((r.drain_s for r in self.results), default=0.0),
            "outcome": "ok" if ok and self.results else "FAIL",
            "problems": sorted({p for r in self.results for p in r.problems}),
        }


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- one run --------------------------------------------------------------------------
def run_once(scenario: Scenario, seed: str, drain_timeout: float,
             overrides: dict[str, str] | None = None) -> RunResult:
    """Start a cluster, hurt it, measure; the run's directory is kept if it failed."""
    workdir = Path(tempfile.mkdtemp(prefix="cf-", dir="/tmp"))  # short: a unix socket path
    env = {k: v.format(workdir=workdir) for k, v in scenario.env.items()}
    env.update(overrides or {})
    cluster = Cluster(workdir, WORLD, env, scenario.faults)
    trial = Trial(cluster, random.Random(seed), WORLD, concurrency=scenario.concurrency)
    try:
        result = _hurt_and_measure(scenario, trial, drain_timeout)
    finally:
        problem = teardown(cluster)
    if problem:
        result.problems.append(problem)
    if result.ok:
        shutil.rmtree(workdir, ignore_errors=True)
    else:
        result.notes.append(f"logs kept in {workdir}")
    return result


def _hurt_and_measure(scenario: Scenario, trial: Trial, drain_timeout: float) -> RunResult:
    try:
        scenario.start(trial, scenario.workers)
        scenario.inject(trial)
        finished = wait_finished(trial, drain_timeout)
        result = measure(trial, finished)
    except Exception:
        return _broken_run(trial, traceback.format_exc())
    if scenario.check is not None:
        result.problems += scenario.check(trial, result)
    if trial.job_id is None:
        result.problems.append("no job was launched")
    return result


def _broken_run(trial: Trial, error: str) -> RunResult:
    """The harness itself failed: measure what can be, else count every item as lost."""
    try:
        result = measure(trial, finished=False)
    except Exception:
        items = sum(len(keys) for keys in expected_keys(trial.world).values())
        result = RunResult(lost=items, duplicate_items=0, duplicate_executions=0, drain_s=0.0,
                           problems=list(trial.problems), notes=list(trial.notes))
    result.problems.append("the harness failed:\n" + error)
    return result


def teardown(cluster: Cluster) -> str | None:
    """The job is over: kill workers outright (nothing is left to lose), then stop the rest.
    Returns what went wrong, if anything: a teardown must not end the whole harness."""
    try:
        if cluster.redis is not None and cluster.redis.poll() is None:
            cluster.redis.send_signal(signal.SIGCONT)
        for proc in cluster.workers:
            if proc.poll() is None:
                with suppress(ProcessLookupError):
                    cluster.kill_worker(proc, signal.SIGKILL)
        cluster.stop()
    except Exception:
        if cluster.redis is not None and cluster.redis.poll() is None:
            cluster.redis.kill()  # never leave a server behind
            cluster.redis.wait(timeout=10)
        return "teardown failed:\n" + traceback.format_exc()
    return None


# -- many runs ------------------------------------------------------------------------
def run_all(names: Sequence[str], runs: int, seed: int, drain_timeout: float,
            overrides: dict[str, str] | None = None) -> list[Row]:
    by_name = {s.name: s for s in SCENARIOS}
    rows = []
    for name in names:
        row = Row(name)
        for i in range(runs):
            run_seed = f"{seed}:{name}:{i}"
            started = time.monotonic()
            result = run_once(by_name[name], run_seed, drain_timeout, overrides)
            row.results.append(result)
            say(_progress_line(name, i, result, time.monotonic() - started))
        rows.append(row)
    return rows


def _progress_line(name: str, i: int, r: RunResult, took: float) -> str:
    head = (f"{name} #{i + 1}: lost {r.lost}, duplicate items {r.duplicate_items}, "
            f"duplicate executions {r.duplicate_executions}, drain {r.drain_s:.1f}s "
            f"({took:.0f}s) {'ok' if r.ok else 'FAIL'}")
    details = [*r.problems, *r.notes]
    return "\n".join([head, *("    " + d.replace("\n", "\n    ") for d in details)])


# -- output ---------------------------------------------------------------------------
COLUMNS = ("scenario", "runs", "lost", "duplicate_items", "duplicate_executions",
           "worst_drain_s", "outcome")


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as aligned text columns, then each failing row's problems."""
    cells = [list(COLUMNS)] + [[str(r[c]) for c in COLUMNS] for r in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(COLUMNS))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(line, widths, strict=True)).rstrip()
             for line in cells]
    for r in rows:
        lines += [f"{r['scenario']}: {p.splitlines()[0]}" for p in r["problems"]]
    return "\n".join(lines)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    names = [s.name for s in SCENARIOS]
    catalogue = "\n".join(f"  {s.name:<30} {s.about}" for s in SCENARIOS)
    p = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__,
                                epilog="scenarios:\n" + catalogue,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="print the rows as JSON, last line")
    p.add_argument("--runs", type=int, default=5, help="runs of each scenario")
    p.add_argument("--only", nargs="+", choices=names, metavar="SCENARIO",
                   help=f"these scenarios only: {', '.join(names)}")
    p.add_argument("--quick", action="store_true",
                   help=f"1 run of the fastest scenarios ({', '.join(QUICK)})")
    p.add_argument("--seed", type=int, help="replay a run's dice (default: a fresh seed)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment setting for every cluster (e.g. TASK_BACKOFF_BASE_S=1)")
    p.add_argument("--drain-timeout", type=float, default=120.0,
                   help="seconds a hurt job may take to finish before it counts as stuck")
    args = p.parse_args(argv)
    if args.quick:
        args.runs, args.only = 1, args.only or QUICK
    args.only = args.only or names
    args.seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scenarios; exit 0 only if every row is ok."""
    args = parse_args(argv)
    say(f"fault injection: seed {args.seed}, {args.runs} run(s) of {', '.join(args.only)}")
    overrides = dict(pair.split("=", 1) for pair in args.set)
    rows = [r.as_dict() for r in
            run_all(args.only, args.runs, args.seed, args.drain_timeout, overrides)]
    if args.json:
        print(json.dumps({"seed": args.seed, "rows": rows}))
    else:
        print(table(rows))
    return 0 if all(r["outcome"] == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
