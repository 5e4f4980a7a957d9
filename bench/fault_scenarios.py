"""The faults the harness injects, one function each, on a real local cluster.

Each scenario starts a cluster (``start``), hurts it at a seeded random moment
(``inject``, which returns once the fault is over or handed to a thread) and may
check something of its own afterwards (``check``). Everything is a real process
on loopback or a unix socket: pool children and worker process groups get real
signals, the broker is the real ``redis-server`` (AOF on) killed, paused and
restarted on its data dir, SQLite is locked by another real writer. Every loop
is bounded in count and time.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from bench.fault_hosts import (
    HEAVY_ENV,
    check_other_jobs,
    check_recycled,
    cold_shutdown,
    heavy_pages_start,
    host_lost,
    launch_twice,
    second_sigterm,
    watch_children,
)
from bench.fault_launch import CHAIN, start_and_launch
from bench.fault_measure import (
    RunResult,
    Trial,
    at_random_progress,
    owner_of_port,
    user_info_unit,
)
from bench.fault_postgres import (
    check_redelivered,
    kill_waiting_writer,
    postgres_start,
    take_database_down,
)
from bench.fault_postgres import unavailable as postgres_unavailable
from bench.fault_rabbit import kill_rabbit_then_restart, rabbit_start
from bench.fault_rabbit import unavailable as rabbit_unavailable
from bench.fault_stores import (
    HALF_OPEN,
    check_reconnected,
    check_recrawl_ended,
    crawl_then_recrawl,
    freeze_broker_past_timeout,
    lose_dedup_store,
)
from chains.runtime.launch import launch
from external_interface import keys
from sandbox.server import Faults, Hit, Site, url_key

LATENCY = Faults(latency_s=0.02)  # spreads the job over a few seconds: faults land mid-fetch
PATIENT = {"TASK_MAX_RETRIES": "12"}  # outlasts a few seconds of storage outage
FAST_FAILING_SQLITE = "sqlite:///{workdir}/items.db?busy_timeout_s=0.3"  # run dir filled in
RETRY_GAP_SLACK_S = 6.0  # queueing on a busy 2-core box, on top of the capped countdown
HONOURED = 0.9  # a Retry-After past the cap must still be waited for (nearly) the whole cap


@dataclass(frozen=True)
class Scenario:
    """A fault, the cluster it needs, and what it checks beyond lost and doubled items."""

    name: str
    about: str
    inject: Callable[[Trial], None]
    workers: int = 1
    concurrency: int = 2
    env: Mapping[str, str] = field(default_factory=dict)
    faults: Faults = LATENCY
    start: Callable[[Trial, int], None] = start_and_launch
    check: Callable[[Trial, RunResult], list[str]] | None = None
    quick: bool = False  # among the fastest: ``--quick`` and the default test suite run it
    unavailable: Callable[[], str | None] | None = None  # why it cannot run here, if so


# -- processes -----------------------------------------------------------------------
def kill_fetching_child(trial: Trial, wanted: Callable[[Hit], bool],
                        timeout: float = 10.0) -> Hit | None:
    """SIGKILL the pool child holding an in-flight request that ``wanted`` picks."""
    sandbox = trial.cluster.sandbox
    assert sandbox is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for hit in sandbox.in_flight():
            pid = owner_of_port(trial, hit.client_port) if wanted(hit) else None
            if pid is not None:
                trial.fault()
                os.kill(pid, signal.SIGKILL)
                return hit
        time.sleep(0.01)
    return None


# -- workers -------------------------------------------------------------------------
def kill_pool_child(trial: Trial) -> None:
    at_random_progress(trial)
    if kill_fetching_child(trial, lambda hit: True) is None:
        trial.note("no fetch in flight to kill")


def kill_worker_then_restart(low: float, high: float) -> Callable[[Trial], None]:
    def inject(trial: Trial) -> None:
        at_random_progress(trial)
        trial.fault()
        trial.stop_worker(signal.SIGKILL)
        time.sleep(trial.rng.uniform(low, high))
        trial.cluster.start_worker(trial.concurrency)
    return inject


def freeze_worker(trial: Trial) -> None:
    """Freeze one of two workers for 3-16 s: across the 12 s visibility timeout, so its
    held messages are sometimes handed to the other worker while it sleeps."""
    at_random_progress(trial)
    trial.fault()
    frozen = trial.cluster.workers[0]
    trial.cluster.signal_worker(frozen, signal.SIGSTOP)
    try:
        time.sleep(trial.rng.uniform(3.0, 16.0))
    finally:
        trial.cluster.signal_worker(frozen, signal.SIGCONT)


def warm_restart(trial: Trial) -> None:
    at_random_progress(trial)
    trial.fault()
    trial.stop_worker(signal.SIGTERM)
    trial.cluster.start_worker(trial.concurrency)


# -- the broker (which is the state Redis too) ---------------------------------------
def kill_broker_then_restart(trial: Trial) -> None:
    at_random_progress(trial)
    trial.fault()
    trial.cluster.kill_redis(signal.SIGKILL)
    time.sleep(trial.rng.uniform(0.5, 4.0))
    trial.cluster.start_redis()


def pause_broker_in_fan_out(trial: Trial) -> None:
    """SIGSTOP the server for 2-6 s early in the job, right after a unit registered its
    children: its publishing of them is then cut in the middle."""
    at_random_progress(trial, 0.02, 0.4)
    if not wait_for_registration(trial, timeout=3.0):
        trial.note("no registration seen within 3 s; paused anyway")
    trial.fault()
    trial.cluster.signal_redis(signal.SIGSTOP)
    try:
        time.sleep(trial.rng.uniform(2.0, 6.0))
    finally:
        trial.cluster.signal_redis(signal.SIGCONT)


def wait_for_registration(trial: Trial, timeout: float) -> bool:
    """Spin on the job's ``pending`` count until it rises: a parent has just registered
    children and is about to publish them (registration precedes publishing)."""
    assert trial.job_id is not None
    client, counts = trial.cluster.runtime.redis, keys.job(trial.job_id, "counts")
    last = int(client.hget(counts, "pending") or 0)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = int(client.hget(counts, "pending") or 0)
        if now > last:
            return True
        last = now
    return False


def start_without_broker(trial: Trial, workers: int) -> None:
    """Workers and the launcher start first; the broker appears 2-12 s later."""
    trial.cluster.start(workers, trial.concurrency, redis=False)
    trial.launched_at = time.time()
    trial.fault()
    launcher = threading.Thread(target=_launch_noting_errors, args=(trial,), daemon=True)
    launcher.start()
    absent = trial.rng.uniform(2.0, 12.0)
    time.sleep(absent)
    trial.cluster.start_redis()
    trial.note(f"the broker appeared after {absent:.1f}s")
    launcher.join(timeout=60)
    if launcher.is_alive():
        trial.note("the launcher was still blocked 60 s after the broker appeared")


def _launch_noting_errors(trial: Trial) -> None:
    """Launch as a separate shell would: its own clients, built while the broker is away."""
    try:
        resources = trial.cluster.build_runtime()
        try:
            trial.job_id = launch(CHAIN, {"page": 1}, runtime=resources,
                                  settings=trial.cluster.site_settings).job_id
        finally:
            resources.store.close()
    except Exception:
        trial.note(f"launch failed {time.time() - (trial.fault_at or 0):.1f}s after it began, "
                   "the broker still absent:\n" + traceback.format_exc())


def nothing_more(trial: Trial) -> None:
    """The fault was the start itself."""


# -- storage -------------------------------------------------------------------------
def hold_write_lock(trial: Trial, seconds: float) -> None:
    """Another writer holds SQLite's write lock, as a backup job would."""
    conn = sqlite3.connect(trial.cluster.workdir / "items.db", timeout=30,
                           isolation_level=None)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        time.sleep(seconds)
        conn.execute("ROLLBACK")
    finally:
        conn.close()


def lock_storage(trial: Trial) -> None:
    """Writes fail fast (busy timeout 0.3 s) for 1.5-4 s: units retry, none may be lost."""
    at_random_progress(trial)
    trial.fault()
    hold_write_lock(trial, trial.rng.uniform(1.5, 4.0))


def slow_storage(trial: Trial) -> None:
    """For 2-5 s every write waits up to 0.8 s for the lock (busy timeout 10 s): slow, not
    failing."""
    at_random_progress(trial)
    trial.fault()
    until = time.monotonic() + trial.rng.uniform(2.0, 5.0)
    while time.monotonic() < until:
        hold_write_lock(trial, trial.rng.uniform(0.3, 0.8))
        time.sleep(0.05)


# -- poison and hostile servers -------------------------------------------------------
def poison_start(trial: Trial, workers: int) -> None:
    """One author's profile hangs; the harness kills the child fetching it every time."""
    victim = trial.rng.choice(sorted({a.author_id for a in trial.world.articles.values()}))
    trial.cluster.faults = replace(LATENCY, slow_users=frozenset({victim}), slow_s=20.0)
    trial.expected_failures[user_info_unit(victim)] = "PermanentError: poison unit"
    trial.exempt_urls.add(url_key(f"/h5/user/{victim}", {}))
    start_and_launch(trial, workers)


def kill_poison_every_time(trial: Trial) -> None:
    """Kill each attempt at the victim while it is in flight, within 120 s and at most a
    few times past the poison limit (a limit not enforced is reported, not looped on)."""
    [victim_url] = trial.exempt_urls
    [victim_unit] = trial.expected_failures
    ledger = trial.cluster.runtime.ledger
    limit = trial.cluster.runtime.settings.task.max_deliveries
    killed: set[tuple[int, float]] = set()
    deadline = time.monotonic() + 120
    while len(killed) < limit + 3 and time.monotonic() < deadline:
        assert trial.job_id is not None
        if ledger.is_finished(trial.job_id, victim_unit):
            break
        hit = kill_fetching_child(
            trial, lambda h: h.url == victim_url and (h.client_port, h.arrived) not in killed,
            timeout=1.0)
        if hit is not None:
            killed.add((hit.client_port, hit.arrived))
    trial.note(f"killed the victim's child {len(killed)} times")
    if len(killed) > limit:
        trial.problem(f"the victim was started again after {len(killed)} deaths, past the "
                      f"poison limit of {limit}")


def rate_limit_for_a_while(trial: Trial) -> None:
    """For 0.5-2 s every URL's first request answers 429 with a Retry-After of an hour."""
    at_random_progress(trial)
    site = _site(trial)
    trial.fault()
    site.faults = replace(site.faults, rate_limited=True, rate_limit_retry_after=3600)
    time.sleep(trial.rng.uniform(0.5, 2.0))
    site.faults = replace(site.faults, rate_limited=False)


def check_rate_limit(trial: Trial, result: RunResult) -> list[str]:
    """Each 429'd URL came back within the capped backoff (plus queueing), exactly once."""
    assert trial.cluster.sandbox is not None
    hits = sorted(trial.cluster.sandbox.hits(), key=lambda h: h.arrived)
    limited = [h for h in hits if h.status == 429]
    gaps = [_next_arrival(hits, h) for h in limited]
    problems = []
    if not limited:
        result.notes.append("no request was answered 429: the window fell between requests")
    if any(g is None for g in gaps):
        problems.append("a URL answered 429 was never requested again")
    waits = [g for g in gaps if g is not None]
    shortest, longest = min(waits, default=0.0), max(waits, default=0.0)
    result.notes.append(f"{len(limited)} URLs answered 429; waits {shortest:.1f}-{longest:.1f}s")
    cap = wait_cap(trial)
    if longest > cap + RETRY_GAP_SLACK_S:
        problems.append(f"a 429 was retried after {longest:.1f}s, past the "
                        f"{cap}s cap plus {RETRY_GAP_SLACK_S}s slack")
    if waits and shortest < HONOURED * cap:
        problems.append(f"a 429 with Retry-After: 3600 was retried after {shortest:.2f}s: "
                        f"the advice was not honoured up to the {cap}s cap")
    if result.duplicate_executions:
        problems.append(f"{result.duplicate_executions} duplicate executions after 429s")
    return problems


def wait_cap(trial: Trial) -> float:
    """The longest a 429 may hold a URL back: the unit's retry backoff cap, or the site's
    cooldown cap if longer (the retried unit then waits for the cooldown to end)."""
    settings = trial.cluster.runtime.settings
    return max(settings.task.backoff_max_s, settings.politeness.max_penalty_s)


def _next_arrival(hits: list[Hit], limited: Hit) -> float | None:
    answered = limited.answered or limited.arrived
    later = [h.arrived for h in hits if h.url == limited.url and h.arrived > answered]
    return min(later) - answered if later else None


def _site(trial: Trial) -> Site:
    assert trial.cluster.sandbox is not None
    return trial.cluster.sandbox.site


# A message kombu's Redis transport has popped (BRPOP) but not yet recorded as unacked
# is lost when its worker or the broker dies in between (celery/celery#7950): these
# scenarios lose a whole message about once in ten runs until the ledger's sweeper
# republishes units that were registered but never started (issue 7).
SCENARIOS: list[Scenario] = [
    Scenario("pool_child_sigkill", "SIGKILL of a pool child mid-fetch", kill_pool_child,
             quick=True),
    Scenario("worker_sigkill_restart_now", "SIGKILL of the worker's process group, "
             "restarted at once", kill_worker_then_restart(0.0, 0.0)),
    Scenario("worker_sigkill_restart_later", "SIGKILL of the worker's process group, "
             "restarted after 3-8 s", kill_worker_then_restart(3.0, 8.0)),
    Scenario("worker_frozen", "SIGSTOP of one of two workers for 3-16 s, then SIGCONT",
             freeze_worker, workers=2),
    Scenario("worker_warm_restart", "SIGTERM (warm shutdown) mid-job, started again",
             warm_restart, quick=True),
    Scenario("broker_sigkill_restart", "redis-server SIGKILLed, restarted on its AOF after "
             "0.5-4 s", kill_broker_then_restart),
    Scenario("broker_absent_at_start", "workers and launcher start 2-12 s before the broker",
             nothing_more, start=start_without_broker),
    Scenario("broker_pause_fan_out", "redis-server SIGSTOPped for 2-6 s during fan-out",
             pause_broker_in_fan_out),
    Scenario("storage_locked", "SQLite write-locked by another writer for 1.5-4 s",
             lock_storage, env={**PATIENT, "STORAGE_URL": FAST_FAILING_SQLITE}),
    Scenario("storage_slow", "SQLite writes wait up to 0.8 s each for 2-5 s", slow_storage,
             env=PATIENT),
    Scenario("poison_unit", "a profile whose fetching child is SIGKILLed every time",
             kill_poison_every_time, start=poison_start),
    Scenario("rate_limited_429", "429 with Retry-After: 3600 on every URL for 0.5-2 s",
             rate_limit_for_a_while, check=check_rate_limit, quick=True),
    Scenario("worker_cold_shutdown", "SIGQUIT (cold shutdown) of the worker mid-job, "
             "started again", cold_shutdown),
    Scenario("worker_second_sigterm", "a second SIGTERM 0.1-2 s into a warm shutdown, "
             "started again", second_sigterm),
    Scenario("worker_host_lost", "one of two workers SIGKILLed for good (no restart)",
             host_lost, workers=2),
    Scenario("launched_twice", "the same chain launched at once from two processes",
             nothing_more, start=launch_twice, check=check_other_jobs),
    Scenario("rabbitmq_sigkill_restart", "a private RabbitMQ node as the broker, kill -9'd "
             "mid-job, started again on its data after 0.5-4 s", kill_rabbit_then_restart,
             start=rabbit_start, unavailable=rabbit_unavailable),
    Scenario("memory_recycling", "4 article pages of 50 MB; pool children recycled past "
             "200 MB (--max-memory-per-child)", watch_children, start=heavy_pages_start,
             env=HEAVY_ENV, check=check_recycled),
    Scenario("broker_half_open", "redis-server SIGSTOPped past the broker socket timeout (5 s "
             "here) by 2-8 s, then SIGCONT", freeze_broker_past_timeout, env=HALF_OPEN,
             check=check_reconnected),
    Scenario("dedup_store_lost", "the dedup marks' own Redis SIGKILLed mid-recrawl, started "
             "empty 0-2 s later", lose_dedup_store, start=crawl_then_recrawl,
             env={"DEDUP_REDIS_URL": "unix://{workdir}/dedup.sock"}, check=check_recrawl_ended),
    Scenario("postgres_down", "PostgreSQL store: every connection to the run's database "
             "terminated, new ones refused for 1.5-4 s", take_database_down,
             start=postgres_start, env=PATIENT, unavailable=postgres_unavailable),
    Scenario("postgres_kill_during_write", "PostgreSQL store: items tables locked, the pool "
             "child whose write waits SIGKILLed, then released", kill_waiting_writer,
             start=postgres_start, check=check_redelivered, unavailable=postgres_unavailable),
]
