"""Faults of whole workers and hosts: shutdowns an operator starts, a host that never comes
back, two hosts launching the same chain at once. Real signals to real worker processes;
every wait bounded."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from dataclasses import replace

import psutil

from bench.fault_launch import start_and_launch
from bench.fault_measure import RunResult, Trial, at_random_progress, job_state, poll
from chains.runtime.ledger import FINISHED, FINISHED_WITH_FAILURES
from sandbox.cluster import ROOT
from sandbox.server import Faults

EXIT_WAIT_S = 60.0  # a worker told to stop cold must be gone by then (generous: 2 busy cores)


def signal_main(trial: Trial, sig: int) -> None:
    """``sig`` to the first worker's main process only, as ``kill PID`` would send it."""
    proc = trial.cluster.workers[0]
    trial.stopped.add(proc.pid)
    proc.send_signal(sig)


def wait_exit(trial: Trial, what: str) -> None:
    """The first worker must exit within ``EXIT_WAIT_S``; a problem (and a SIGKILL) if not."""
    proc = trial.cluster.workers[0]
    try:
        proc.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        trial.problem(f"the worker was still running {EXIT_WAIT_S:.0f}s after {what}")
        trial.cluster.kill_worker(proc, signal.SIGKILL)


def cold_shutdown(trial: Trial) -> None:
    """SIGQUIT (Celery's cold shutdown: running units are abandoned unacked), started again."""
    at_random_progress(trial)
    trial.fault()
    signal_main(trial, signal.SIGQUIT)
    wait_exit(trial, "SIGQUIT")
    trial.cluster.start_worker(trial.concurrency)


def second_sigterm(trial: Trial) -> None:
    """SIGTERM starts a warm shutdown; a second SIGTERM 0.1-2 s into it (an impatient
    operator, a supervisor's retry) must still lose nothing. Started again afterwards."""
    at_random_progress(trial)
    trial.fault()
    signal_main(trial, signal.SIGTERM)
    time.sleep(trial.rng.uniform(0.1, 2.0))
    if trial.cluster.workers[0].poll() is None:
        signal_main(trial, signal.SIGTERM)
    else:
        trial.note("the warm shutdown was over before the second SIGTERM")
    wait_exit(trial, "two SIGTERMs")
    trial.cluster.start_worker(trial.concurrency)


def host_lost(trial: Trial) -> None:
    """One of two workers' whole process group SIGKILLed and never started again: its
    units are the other worker's to finish (after the visibility timeout)."""
    at_random_progress(trial)
    trial.fault()
    trial.stop_worker(signal.SIGKILL)


# -- memory recycling -------------------------------------------------------------------
HEAVY_PAGES = 4  # article pages of ``HEAVY_BYTES`` each
HEAVY_BYTES = 50_000_000
CHILD_LIMIT_KB = 200_000  # a pool child is ~80 MB; parsing one heavy page takes it past 250
# Bigger pages than the default 10 MB cap are fetched whole here.
HEAVY_ENV = {"FETCH_MAX_BODY_BYTES": str(64 * 1024 * 1024)}
KILLED_SIGNS = ("signal 9", "SIGKILL", "Out of memory", "WorkerLostError")


def heavy_pages_start(trial: Trial, workers: int) -> None:
    """A few article pages of 50 MB; the worker's pool children are recycled past 200 MB
    (``--max-memory-per-child``)."""
    heavy = trial.rng.sample(sorted(trial.world.articles), HEAVY_PAGES)
    trial.cluster.faults = replace(trial.cluster.faults or Faults(),
                                   huge_articles=frozenset(heavy), huge_bytes=HEAVY_BYTES)
    trial.cluster.worker_args = ["--max-memory-per-child", str(CHILD_LIMIT_KB)]
    trial.note(f"heavy pages: {', '.join(heavy)}")
    start_and_launch(trial, workers)


def watch_children(trial: Trial) -> None:
    """Every pool child the worker had until the job ended (120 s at most): recycled
    children are replaced by new pids."""
    trial.fault()
    seen: set[int] = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and job_state(trial) not in (FINISHED,
                                                                    FINISHED_WITH_FAILURES):
        for worker in trial.cluster.workers:
            try:
                seen |= {c.pid for c in psutil.Process(worker.pid).children()}
            except psutil.Error:
                continue
        time.sleep(0.1)
    trial.children_seen = len(seen)


def check_recycled(trial: Trial, result: RunResult) -> list[str]:
    """Children were recycled (more pids than pool slots), none was killed."""
    recycled = trial.children_seen - trial.concurrency * len(trial.cluster.workers)
    result.notes.append(f"{recycled} pool children recycled")
    logs = "".join(p.read_text(errors="replace") for p in trial.cluster.workdir.glob("w*.log"))
    problems = [f"a worker log says {sign!r}" for sign in KILLED_SIGNS if sign in logs]
    if recycled < 1:
        problems.append("no pool child was recycled: the memory limit never acted")
    return problems


# -- the same chain launched twice -----------------------------------------------------
LAUNCHED = re.compile(r"launched job (\S+)")


def launch_twice(trial: Trial, workers: int) -> None:
    """Two ``crawlchain launch demo --detach`` processes started at once, as from two hosts
    (the declared chain, recrawl policies on): two jobs, each item stored once."""
    trial.cluster.start(workers, trial.concurrency)
    trial.jobs_per_url = 2
    trial.recrawl = True  # a unit the other job just fetched is fresh: skipped, not counted
    trial.launched_at = time.time()
    trial.fault()
    command = [sys.executable, "-m", "cli", "launch", "demo", "page=1", "--detach"]
    launchers = [subprocess.Popen(command, cwd=ROOT, env=trial.cluster.env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                 for _ in range(2)]
    jobs = []
    for proc in launchers:
        out, _ = proc.communicate(timeout=120)
        found = LAUNCHED.search(out)
        if proc.returncode != 0 or found is None:
            trial.problem(f"a launcher exited {proc.returncode}: {out[-500:]}")
        else:
            jobs.append(found.group(1))
    trial.job_id = jobs[0] if jobs else None
    trial.other_jobs = jobs[1:]


def check_other_jobs(trial: Trial, result: RunResult) -> list[str]:
    """The other launch's job finished too, and counted no more items than are stored."""
    ledger = trial.cluster.runtime.ledger
    problems = []
    for job in trial.other_jobs:
        def ended(job: str = job) -> bool:
            return ledger.state(job) in (FINISHED, FINISHED_WITH_FAILURES)

        if not poll(ended, 120.0):
            problems.append(f"the second job {job} did not finish")
            continue
        counted = sum(s["items"] for s in ledger.counts(job).values())
        distinct = sum(len(set(k)) for k in trial.cluster.stored_keys().values())
        if counted > distinct:
            problems.append(f"the second job counted {counted} items; {distinct} are stored")
        if ledger.failures(job):
            problems.append(f"the second job has {len(ledger.failures(job))} failures")
    stored = trial.cluster.stored_keys()
    doubled = sum(len(k) - len(set(k)) for k in stored.values())
    result.duplicate_items = max(result.duplicate_items, doubled)  # measured once both ended
    result.notes.append(f"jobs {trial.job_id} and {', '.join(trial.other_jobs)}")
    return problems
