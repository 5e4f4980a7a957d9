"""Faults of the Redis servers: the broker frozen past its clients' socket timeouts (a
half-open connection), and the dedup marks' own Redis lost and restarted empty."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time

from bench.fault_launch import launch_now
from bench.fault_measure import RunResult, Trial, at_random_progress, wait_finished
from chains.demo import demo as declared_demo
from ops import embedded_redis

# The broker's socket timeout and health checks, lowered from 30 s and 25 s so that a
# run takes seconds: the freeze outlasts the timeout, and a stale BRPOP is dropped.
HALF_OPEN = {"CELERY_BROKER_SOCKET_TIMEOUT": "5", "CELERY_BROKER_HEALTH_CHECK_INTERVAL": "3"}
FIRST_CRAWL_S = 180.0  # the crawl before the fault; generous on two busy cores


# -- a half-open broker connection -----------------------------------------------------
def freeze_broker_past_timeout(trial: Trial) -> None:
    """SIGSTOP the broker (the state Redis too) for the broker socket timeout plus 2-8 s,
    then SIGCONT: the workers must go on consuming and the job end. (On a unix socket the
    frozen server's connections survive the SIGCONT; a reconnection is noted, not required.)"""
    at_random_progress(trial)
    timeout = float(trial.cluster.env["CELERY_BROKER_SOCKET_TIMEOUT"])
    frozen = timeout + trial.rng.uniform(2.0, 8.0)
    trial.fault()
    trial.cluster.signal_redis(signal.SIGSTOP)
    try:
        time.sleep(frozen)
    finally:
        trial.cluster.signal_redis(signal.SIGCONT)
    trial.note(f"the broker was frozen {frozen:.1f}s (socket timeout {timeout:.0f}s)")


def check_reconnected(trial: Trial, result: RunResult) -> list[str]:
    """Notes how often the workers logged a lost or stale broker connection; that they
    consumed again is measured (the job finished), so this adds no problem."""
    logs = "".join(p.read_text(errors="replace") for p in trial.cluster.workdir.glob("w*.log"))
    noticed = sum(logs.count(s) for s in STALE_SIGNS)
    result.notes.append(f"{noticed} lost or stale broker connections logged by the workers")
    return []


STALE_SIGNS = ("Connection to broker lost", "dropping stale connection", "Timeout reading")


# -- the dedup store lost --------------------------------------------------------------
def dedup_server(trial: Trial) -> subprocess.Popen[bytes]:
    """(Re)start the dedup marks' redis-server on its socket, on an empty data dir."""
    workdir = trial.cluster.workdir
    shutil.rmtree(workdir / "dedup", ignore_errors=True)
    return embedded_redis.start(workdir / "dedup", workdir / "dedup.sock",
                                workdir / "dedup.log")


def crawl_then_recrawl(trial: Trial, workers: int) -> None:
    """The dedup Redis apart (``DEDUP_REDIS_URL``); the declared chain (recrawl policies
    on) crawled once to its end, then launched again: the job the fault hurts, which
    skips fresh units by the marks the first crawl wrote."""
    trial.recrawl = True
    trial.servers.append(dedup_server(trial))
    trial.cleanups.append(lambda: _stop_all(trial.servers))
    trial.cluster.start(workers, trial.concurrency)
    launch_now(trial, declared_demo)
    if not wait_finished(trial, FIRST_CRAWL_S):
        trial.problem(f"the first crawl did not finish in {FIRST_CRAWL_S:.0f}s")
    first = trial.job_id
    launch_now(trial, declared_demo)
    trial.other_jobs = [str(first)]
    trial.jobs_per_url = 2


def lose_dedup_store(trial: Trial) -> None:
    """SIGKILL the dedup Redis mid-recrawl, delete its files, start it empty 0-2 s later."""
    at_random_progress(trial)
    trial.fault()
    trial.servers[-1].kill()
    trial.servers[-1].wait(timeout=30)
    time.sleep(trial.rng.uniform(0.0, 2.0))
    trial.servers.append(dedup_server(trial))


def check_recrawl_ended(trial: Trial, result: RunResult) -> list[str]:
    """No endless re-discovery: the recrawl spawned exactly the crawl's units, no more."""
    if trial.job_id is None:
        return []
    counts = trial.cluster.runtime.ledger.counts(trial.job_id)
    spawned = sum(s["spawned"] for s in counts.values())
    fetched = sum(s["done"] for s in counts.values())
    result.notes.append(f"the recrawl spawned {spawned} units and fetched {fetched}")
    if spawned != trial.total_units():
        return [f"the recrawl spawned {spawned} units; the site has {trial.total_units()}"]
    return []


def _stop_all(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
