"""What one fault-injection run measured, and how the harness waits on a job it is hurting.

The figures come from outside the crawler wherever they can: the expected item
keys from the sandbox's data (``expected_keys``), executions from the sandbox's
own request log, stored keys from the item store. Only dead letters and the
items counter come from the ledger, because what they measure is what the
ledger says.

* lost: expected item keys, minus stored keys, minus the keys of units that
  were dead-lettered with a reason (a unit that failed for good is accounted
  for, not lost; whether it *should* have failed is the scenario's own check);
* duplicate items: records stored more than once (rows minus distinct keys),
  plus items the job counted beyond the distinct keys stored;
* duplicate executions: 200 answers delivered for one URL beyond the first;
  failed fetches (503, 429, a timeout) are retries, not executions;
* drain: seconds from the fault's injection to the job's ``finished_at``.

Every wait here is bounded in time, and polls tolerate the state Redis being
away (it is the broker too, and some scenarios kill it).
"""

from __future__ import annotations

import json
import random
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import psutil
import redis

from bench.fault_units import describe
from chains.runtime.ledger import FINISHED, FINISHED_WITH_FAILURES, Failure
from chains.runtime.units import revived, unit_id
from external_interface import keys
from external_interface.politeness.redis_throttle import RedisThrottle
from sandbox.cluster import Cluster
from sandbox.server import Hit
from sandbox.world import World, expected_keys

POLL_S = 0.05


@dataclass
class Trial:
    """One run of one scenario: the cluster, the seeded dice, and what happened so far."""

    cluster: Cluster
    rng: random.Random
    world: World
    concurrency: int = 2
    job_id: str | None = None
    other_jobs: list[str] = field(default_factory=list)  # launched beside the measured one
    launched_at: float | None = None  # time.time() when the cluster was asked to crawl
    fault_at: float | None = None  # time.time() of the (first) injection
    progress: float | None = None  # the share of units finished the fault waited for
    expected_failures: dict[str, str] = field(default_factory=dict)  # unit id -> reason prefix
    exempt_urls: set[str] = field(default_factory=set)  # re-executed on purpose (poison)
    rabbit: object = None  # the scenario's own RabbitMQ node, when it has one
    children_seen: int = 0  # distinct pool children while the job ran (recycling)
    recrawl: bool = False  # the measured job skips fresh units: it may count fewer items
    jobs_per_url: int = 1  # jobs that each fetch every URL once (a chain launched twice: 2)
    notes: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # found while injecting
    stopped: set[int] = field(default_factory=set)  # worker pids the harness itself stopped
    cleanups: list[Callable[[], None]] = field(default_factory=list)  # run at teardown
    servers: list[subprocess.Popen[bytes]] = field(default_factory=list)  # a scenario's own

    def fault(self) -> None:
        """Mark the injection moment (the first call wins)."""
        if self.fault_at is None:
            self.fault_at = time.time()

    def moment(self) -> str:
        """When the fault landed, in terms a replay can be compared against."""
        if self.fault_at is None:
            return "no fault injected"
        since = f"{self.fault_at - self.launched_at:.1f}s after launch" \
            if self.launched_at is not None else "before launch"
        share = f", at {self.progress:.0%} of units" if self.progress is not None else ""
        return since + share

    def note(self, text: str) -> None:
        self.notes.append(text)

    def problem(self, text: str) -> None:
        self.problems.append(text)

    def stop_worker(self, sig: int) -> None:
        """Signal the first worker's process group and reap it, as a fault (not a crash)."""
        proc = self.cluster.workers[0]
        self.stopped.add(proc.pid)
        self.cluster.kill_worker(proc, sig)

    def total_units(self) -> int:
        return sum(step["units"] for step in self.world.expected().values())


@dataclass
class RunResult:
    """The figures of one run and what went wrong in it, if anything."""

    lost: int
    duplicate_items: int
    duplicate_executions: int
    drain_s: float
    problems: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seed: str = ""  # the run's seed: ``--replay`` it
    moment: str = ""  # when the fault landed
    lost_items: list[str] = field(default_factory=list)  # ``collection/key <- unit``
    doubled_items: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.lost == 0 and self.duplicate_items == 0 and not self.problems


# -- waiting on the job --------------------------------------------------------------
def units_finished(trial: Trial) -> int | None:
    """Units done, skipped or failed so far; None while the state Redis is unreachable."""
    if trial.job_id is None:
        return None
    try:
        counts = trial.cluster.runtime.ledger.counts(trial.job_id)
    except redis.RedisError:
        return None
    return sum(s["done"] + s["skipped"] + s["failed"] for s in counts.values())


def poll(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll ``predicate`` until it holds or ``timeout`` passes; True if it held."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(POLL_S)
    return False


def at_random_progress(trial: Trial, low: float = 0.1, high: float = 0.7,
                       timeout: float = 60.0) -> float:
    """Block until a seeded random share of the job's units has finished; return it.

    The share, not a delay, picks the moment: the fault then lands mid-job
    whatever the machine's speed.
    """
    share = trial.rng.uniform(low, high)
    trial.progress = share
    target = max(1, int(share * trial.total_units()))
    if not poll(lambda: (units_finished(trial) or 0) >= target, timeout):
        trial.note(f"progress {share:.2f} not reached in {timeout:.0f}s; injected anyway")
    return share


def job_state(trial: Trial) -> str | None:
    if trial.job_id is None:
        return None
    try:
        return trial.cluster.runtime.ledger.state(trial.job_id)
    except redis.RedisError:
        return None


def wait_finished(trial: Trial, timeout: float) -> bool:
    """Wait for the job to finish (Redis outages tolerated); False past ``timeout``."""
    if trial.job_id is None:
        return False
    return poll(lambda: job_state(trial) in (FINISHED, FINISHED_WITH_FAILURES), timeout)


# -- measuring ------------------------------------------------------------------------
def measure(trial: Trial, finished: bool) -> RunResult:
    """Compare what the store holds and the sandbox served with what the world implies."""
    stored = trial.cluster.stored_keys()
    failures = _failures(trial)
    counted = _items_counted(trial)
    distinct = sum(len(set(keys)) for keys in stored.values())
    rows = sum(len(keys) for keys in stored.values())
    lost = lost_keys(trial.world, stored, failures)
    doubled = doubled_keys(stored)
    # An item the store acknowledged but lost was counted by the job: lost, not doubled.
    overcounted = max(0, counted - distinct - len(lost))
    if overcounted:
        doubled.append(f"the job counted {overcounted} items beyond the {distinct} distinct "
                       f"keys stored and the {len(lost)} lost")
    result = RunResult(
        lost=len(lost),
        duplicate_items=(rows - distinct) + overcounted,
        duplicate_executions=duplicate_executions(trial.cluster, trial.exempt_urls,
                                                  trial.jobs_per_url),
        drain_s=_drain_s(trial, finished),
        problems=list(trial.problems),
        notes=list(trial.notes),
        moment=trial.moment(),
        lost_items=[describe(trial.world, item) for item in sorted(lost)],
        doubled_items=doubled,
    )
    result.problems += _problems(trial, finished, stored, failures, counted, distinct)
    return result


def lost_keys(world: World, stored: dict[str, list[str]],
              failures: list[Failure]) -> set[str]:
    """``collection/key`` of every expected item neither stored nor explained by a dead letter."""
    excused = dead_letter_keys(world, failures)
    return {
        f"{collection}/{key}"
        for collection, keys in expected_keys(world).items()
        for key in keys - set(stored.get(collection, [])) - excused.get(collection, set())
    }


def doubled_keys(stored: dict[str, list[str]]) -> list[str]:
    """``collection/key xN`` of every key stored in more than one record."""
    return [f"{collection}/{key} x{n}" for collection, keys in stored.items()
            for key, n in sorted(Counter(keys).items()) if n > 1]


def dead_letter_keys(world: World, failures: list[Failure]) -> dict[str, set[str]]:
    """The items a failed unit and the units below it would have stored.

    Known for the leaf-ward steps the scenarios dead-letter (a profile, an article
    and its comments); a failure of any other step excuses nothing, so its items
    count as lost: the harness errs towards reporting.
    """
    out: dict[str, set[str]] = {}
    for failure in failures:
        params = failure.params
        if failure.step == "user_info":
            out.setdefault("users", set()).add(str(params.get("user_id")))
        elif failure.step == "detail" and params.get("article_id") in world.articles:
            aid = str(params["article_id"])
            out.setdefault("articles", set()).add(aid)
            out.setdefault("comments", set()).update(c["id"] for c in world.comments(aid))
    return out


def successful_executions(hits: list[Hit]) -> Counter[str]:
    """Per URL, the 200 answers the server managed to write out."""
    return Counter(h.url for h in hits if h.status == 200 and h.delivered)


def duplicate_executions(cluster: Cluster, exempt: set[str], per_url: int = 1) -> int:
    """200 answers per URL beyond the ``per_url`` the jobs each needed."""
    assert cluster.sandbox is not None
    counts = successful_executions(cluster.sandbox.hits())
    return sum(n - per_url for url, n in counts.items() if n > per_url and url not in exempt)


def _failures(trial: Trial) -> list[Failure]:
    if trial.job_id is None:
        return []
    return trial.cluster.runtime.ledger.failures(trial.job_id)


def _items_counted(trial: Trial) -> int:
    if trial.job_id is None:
        return 0
    counts = trial.cluster.runtime.ledger.counts(trial.job_id)
    return sum(s["items"] for s in counts.values())


def _drain_s(trial: Trial, finished: bool) -> float:
    """From the injection to ``finished_at``; to now if the job never finished."""
    start = trial.fault_at or time.time()
    end = time.time()
    if finished and trial.job_id is not None:
        meta = trial.cluster.runtime.ledger.meta(trial.job_id)
        end = float(meta.get("finished_at", end))
    return round(max(0.0, end - start), 2)


def _problems(trial: Trial, finished: bool, stored: dict[str, list[str]],
              failures: list[Failure], counted: int, distinct: int) -> list[str]:
    """What makes a run fail besides lost and doubled items."""
    problems = [] if finished else ["the job did not finish: " + stall_report(trial)]
    expected = expected_keys(trial.world)
    strays = sum(len(set(keys) - expected.get(c, set())) for c, keys in stored.items())
    if strays:
        problems.append(f"{strays} stored items the world does not hold")
    if counted < distinct and not trial.recrawl:
        problems.append(f"the job counted {counted} items, the store holds {distinct}")
    problems += _unexpected_failures(trial, failures)
    return problems + _crashed_workers(trial)


def stall_report(trial: Trial) -> str:
    """Where an unfinished job stands: open units per step, what the broker holds, and
    each politeness bucket's slots and throttle; for a report to say why it stalled."""
    if trial.job_id is None:
        return "no job"
    rt = trial.cluster.runtime
    try:
        still_open = [revived(p) for p in rt.ledger.open_units(trial.job_id).values()]
        open_steps = Counter(step for step, _, _ in still_open)
        client = rt.redis
        queues = {_text(key): client.llen(key) for key in client.scan_iter(_type="list")}
        unacked = client.hlen("unacked")
        buckets = {b: rt.limiter.state(b) for b in rt.limiter.buckets()}
        throttles = {k: {_text(f): _text(v) for f, v in client.hgetall(
            keys.polite(k, "throttle")).items()} for k in (
            rt.throttle.observed() if isinstance(rt.throttle, RedisThrottle) else [])}
    except (redis.RedisError, ValueError) as exc:
        return f"state unreadable: {exc!r}"
    return json.dumps({"open": open_steps, "sample": [u for _, _, u in still_open[:3]],
                       "queues": queues, "unacked": unacked,
                       "limiter": buckets, "throttle": throttles}, default=str)


def _text(raw: bytes | str) -> str:
    return raw.decode() if isinstance(raw, bytes) else raw


def _crashed_workers(trial: Trial) -> list[str]:
    """Workers that exited although the harness did not stop them, with their last error."""
    out = []
    for n, proc in enumerate(trial.cluster.workers):
        if proc.poll() is None or proc.pid in trial.stopped:
            continue
        log = trial.cluster.workdir / f"w{n}.log"
        lines = log.read_text(errors="replace").splitlines() if log.exists() else []
        last = next((x for x in lines if "Unrecoverable error" in x), "") or next(
            (x for x in reversed(lines) if "CRITICAL" in x or "ERROR" in x), "")
        out.append(f"worker w{n} exited by itself (code {proc.returncode}): {last[:300]}")
    return out


def _unexpected_failures(trial: Trial, failures: list[Failure]) -> list[str]:
    """Dead letters the scenario did not ask for, or with another reason than it expects."""
    problems = []
    for failure in failures:
        want = trial.expected_failures.get(failure.unit_id)
        if want is None or not failure.reason.startswith(want):
            problems.append(f"unexpected dead letter {failure.step} {failure.params}: "
                            f"{failure.reason}")
    missing = set(trial.expected_failures) - {f.unit_id for f in failures}
    if missing:
        problems.append(f"{len(missing)} expected dead letters missing")
    return problems


def user_info_unit(user_id: str) -> str:
    """The unit id of a profile fetch, as the engine derives it."""
    return unit_id("user_info", {"user_id": user_id})


def owner_of_port(trial: Trial, port: int) -> int | None:
    """The pool child holding a TCP connection from local ``port`` (to the sandbox, to
    PostgreSQL: the server saw that port), or None."""
    for worker in trial.cluster.workers:
        if worker.poll() is not None:
            continue
        try:
            children = psutil.Process(worker.pid).children()
        except psutil.Error:
            continue
        for child in children:
            try:
                if any(c.laddr and c.laddr.port == port for c in child.net_connections("tcp")):
                    return int(child.pid)
            except psutil.Error:
                continue
    return None
