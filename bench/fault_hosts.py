"""Faults of whole workers and hosts: shutdowns an operator starts, a host that never comes
back, two hosts launching the same chain at once. Real signals to real worker processes;
every wait bounded."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

from bench.fault_measure import RunResult, Trial, at_random_progress, poll
from chains.runtime.ledger import FINISHED, FINISHED_WITH_FAILURES
from sandbox.cluster import ROOT

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


# -- the same chain launched twice -----------------------------------------------------
LAUNCHED = re.compile(r"launched job (\S+)")


def launch_twice(trial: Trial, workers: int) -> None:
    """Two ``crawlchain launch demo --detach`` processes started at once, as from two hosts
    (the declared chain, recrawl policies on): two jobs, each item stored once."""
    trial.cluster.start(workers, trial.concurrency)
    trial.jobs_per_url = 2
    trial.launched_at = time.time()
    trial.fault()
    command = [sys.executable, "-m", "chains", "launch", "demo", "page=1", "--detach"]
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
