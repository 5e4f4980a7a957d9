"""Fault injection: does a crawl lose or double anything when its processes are hurt?

    python -m bench.faults --json [--runs 5] [--only SCENARIO ...] [--quick] [--seed N]
    python -m bench.faults --only SCENARIO --replay SEED

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
on past the cap), "skipped" when the scenario cannot run here (with why), else
"FAIL"; ``problems`` says which, and ``failures`` names each failing run: its
seed, the fault's moment, the items lost or doubled with the units that owed them
(``bench.fault_report``). ``--only S --replay SEED`` runs that one run again with
the same dice. The directory of a failing run (worker and redis logs) is kept and
named. Every run's details go to a JSON file under ``run/faults/`` whose path is
printed (stderr). With ``--json`` the last stdout line is
``{"seed", "report", "rows": [...]}``; without it, a table.
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
from pathlib import Path

from bench.fault_measure import RunResult, Trial, measure, wait_finished
from bench.fault_report import Row, table, write_report
from bench.fault_scenarios import SCENARIOS, Scenario
from sandbox.cluster import Cluster
from sandbox.world import World, expected_keys

WORLD = World(seed=5)  # 248 units, 810 items: a run takes seconds, faults land mid-job
QUICK = [s.name for s in SCENARIOS if s.quick]


def say(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


# -- one run --------------------------------------------------------------------------
def run_once(scenario: Scenario, seed: str, drain_timeout: float,
             overrides: dict[str, str] | None = None, keep: bool = False) -> RunResult:
    """Start a cluster, hurt it, measure; the run's directory is kept if it failed.

    The dice are seeded by the scenario's name and ``seed``: the same pair replays the
    same moments and choices."""
    workdir = Path(tempfile.mkdtemp(prefix="cf-", dir="/tmp"))  # short: a unix socket path
    env = {k: v.format(workdir=workdir) for k, v in scenario.env.items()}
    env.update(overrides or {})
    cluster = Cluster(workdir, WORLD, env, scenario.faults)
    trial = Trial(cluster, random.Random(f"{scenario.name}:{seed}"), WORLD,
                  concurrency=scenario.concurrency)
    try:
        result = _hurt_and_measure(scenario, trial, drain_timeout)
    finally:
        problem = teardown(trial)
    if problem:
        result.problems.append(problem)
    result.seed = seed
    if result.ok and not keep:
        shutil.rmtree(workdir, ignore_errors=True)
    if not result.ok or keep:
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
                           problems=list(trial.problems), notes=list(trial.notes),
                           moment=trial.moment())
    result.problems.append("the harness failed:\n" + error)
    return result


def teardown(trial: Trial) -> str | None:
    """The job is over: kill workers outright (nothing is left to lose), then stop the rest,
    the scenario's own servers last. Returns what went wrong, if anything: a teardown must
    not end the whole harness."""
    cluster = trial.cluster
    problems = []
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
        problems.append("teardown failed:\n" + traceback.format_exc())
    for cleanup in reversed(trial.cleanups):
        try:
            cleanup()
        except Exception:
            problems.append("a scenario's cleanup failed:\n" + traceback.format_exc())
    return "\n".join(problems) or None


# -- many runs ------------------------------------------------------------------------
def run_seeds(seed: int, runs: int) -> list[str]:
    """The seeds of a scenario's runs: ``SEED.i``, each replayable on its own."""
    return [f"{seed}.{i}" for i in range(runs)]


def run_all(names: Sequence[str], seeds: Sequence[str], drain_timeout: float,
            overrides: dict[str, str] | None = None, keep: bool = False) -> list[Row]:
    by_name = {s.name: s for s in SCENARIOS}
    rows = []
    for name in names:
        scenario = by_name[name]
        row = Row(name, skipped=scenario.unavailable() if scenario.unavailable else None)
        if row.skipped:
            say(f"{name}: skipped: {row.skipped}")
        for run_seed in [] if row.skipped else seeds:
            started = time.monotonic()
            result = run_once(scenario, run_seed, drain_timeout, overrides, keep)
            row.results.append(result)
            say(_progress_line(name, result, time.monotonic() - started))
        rows.append(row)
    return rows


def _progress_line(name: str, r: RunResult, took: float) -> str:
    head = (f"{name} seed {r.seed}: lost {r.lost}, duplicate items {r.duplicate_items}, "
            f"duplicate executions {r.duplicate_executions}, drain {r.drain_s:.1f}s "
            f"({took:.0f}s) {'ok' if r.ok else 'FAIL'}")
    details = [*r.problems, *r.notes]
    if not r.ok:
        details = [f"fault {r.moment}", *(f"lost {x}" for x in r.lost_items),
                   *(f"doubled {x}" for x in r.doubled_items), *details]
    return "\n".join([head, *("    " + d.replace("\n", "\n    ") for d in details)])


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
    p.add_argument("--seed", type=int, help="the runs' dice (default: a fresh seed)")
    p.add_argument("--replay", metavar="SEED",
                   help="run once more the run of this seed (as a report names it, N.i); "
                        "needs --only with one scenario")
    p.add_argument("--set", action="append", default=[], metavar="NAME=VALUE",
                   help="an environment setting for every cluster (e.g. TASK_BACKOFF_BASE_S=1)")
    p.add_argument("--keep", action="store_true",
                   help="keep every run's directory (worker and redis logs), not only failures'")
    p.add_argument("--drain-timeout", type=float, default=120.0,
                   help="seconds a hurt job may take to finish before it counts as stuck")
    args = p.parse_args(argv)
    if args.replay is not None and (not args.only or len(args.only) != 1):
        p.error("--replay needs --only with the one scenario the seed belongs to")
    if args.quick:
        args.runs, args.only = 1, args.only or QUICK
    args.only = args.only or names
    args.seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**6)
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the scenarios; exit 0 only if every row is ok."""
    args = parse_args(argv)
    seeds = [args.replay] if args.replay is not None else run_seeds(args.seed, args.runs)
    say(f"fault injection: seed {args.seed}, run seeds {seeds[0]}.., {len(seeds)} run(s) of "
        f"{', '.join(args.only)}")
    overrides = dict(pair.split("=", 1) for pair in args.set)
    started = time.monotonic()
    found = run_all(args.only, seeds, args.drain_timeout, overrides, args.keep)
    path = write_report(args.seed, list(argv if argv is not None else sys.argv[1:]), found,
                        time.monotonic() - started)
    say(f"report: {path}")
    rows = [r.as_dict() for r in found]
    if args.json:
        print(json.dumps({"seed": args.seed, "report": str(path), "rows": rows}))
    else:
        print(table(rows))
    return 0 if all(r["outcome"] in ("ok", "skipped") for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
