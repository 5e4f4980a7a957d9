"""The nemesis: a seeded schedule of faults drawn from the catalogue, injected on a
``ChaosLab`` every 10-30 s, each healed after its own while, overlapping.

    schedule = plan(seed, minutes=10, workers=4)   # the same seed, the same schedule
    nemesis = Nemesis(lab, schedule); nemesis.start(); ...; nemesis.stop_and_heal()

Each fault holds its target (a worker, the broker, the state Redis, the store) while it
lasts, so two faults never fight over one process: a fault whose target is still hurt
starts when it is free (its planned time and its actual time are both reported). The
catalogue (``KINDS``): SIGKILL of a worker's whole process group or of one pool child,
a worker frozen (SIGSTOP, then SIGCONT) or told to stop warm (SIGTERM) and started
again, the broker or the state Redis killed (SIGKILL; restarted on its AOF) or paused
(SIGSTOP), the store stalled (another writer holds SQLite's write lock) or its disk
filled, and the namespaced worker partitioned from Redis and the site (its veth down).
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import threading
import time
import traceback
from collections.abc import Callable
from contextlib import suppress
from dataclasses import dataclass, field

from bench.chaos_lab import ChaosLab

GAP_S = (10.0, 30.0)
# kind -> (seconds the fault lasts before it is healed, what it hurts)
KINDS: dict[str, tuple[tuple[float, float], str]] = {
    "kill_worker": ((1.0, 5.0), "worker"),
    "kill_child": ((0.0, 1.0), "worker"),  # the length picks which child
    "freeze_worker": ((2.0, 15.0), "worker"),
    "stop_worker": ((0.0, 0.0), "worker"),
    "kill_broker": ((1.0, 5.0), "broker"),
    "pause_broker": ((2.0, 10.0), "broker"),
    "kill_state": ((1.0, 5.0), "state"),
    "pause_state": ((2.0, 10.0), "state"),
    "stall_store": ((3.0, 12.0), "store"),
    "fill_disk": ((3.0, 12.0), "store"),
    "partition": ((3.0, 20.0), "partition"),
}
TARGET_WAIT_S = 120.0  # a fault waits this long at most for its target to be free
EXIT_WAIT_S = 60.0  # a worker told to stop warm must be gone by then


@dataclass
class Fault:
    """One planned fault and, once run, when it started and when it was healed."""

    at_s: float  # planned, from the nemesis' start
    kind: str
    lasts_s: float
    victim: int  # which worker (a slot), when the kind hurts one
    started_s: float | None = None
    healed_s: float | None = None
    note: str = ""

    @property
    def target(self) -> str:
        what = KINDS[self.kind][1]
        return f"worker{self.victim}" if what in ("worker", "partition") else what

    @property
    def heal_s(self) -> float | None:
        if self.started_s is None or self.healed_s is None:
            return None
        return round(self.healed_s - self.started_s, 2)

    def as_dict(self) -> dict[str, object]:
        return {"at_s": round(self.at_s, 1), "kind": self.kind, "target": self.target,
                "lasts_s": round(self.lasts_s, 1),
                "started_s": None if self.started_s is None else round(self.started_s, 1),
                "healed_s": None if self.healed_s is None else round(self.healed_s, 1),
                "heal_s": self.heal_s, "note": self.note}


def plan(seed: int, minutes: float, workers: int) -> list[Fault]:
    """The run's faults from ``seed`` alone: times, kinds, lengths and victims."""
    rng = random.Random(f"chaos:{seed}")
    faults, at = [], rng.uniform(5.0, 15.0)
    kinds = sorted(KINDS)
    while at < minutes * 60:
        kind = rng.choice(kinds)
        low, high = KINDS[kind][0]
        victim = workers - 1 if kind == "partition" else rng.randrange(workers)
        faults.append(Fault(at, kind, rng.uniform(low, high), victim))
        at += rng.uniform(*GAP_S)
    return faults


@dataclass
class Nemesis:
    """Runs a schedule on a lab, one thread per fault."""

    lab: ChaosLab
    schedule: list[Fault]
    started: float = field(default_factory=time.monotonic)
    problems: list[str] = field(default_factory=list)
    _locks: dict[str, threading.Lock] = field(default_factory=dict)
    _threads: list[threading.Thread] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _planner: threading.Thread | None = None

    def start(self) -> None:
        self.started = time.monotonic()
        self._planner = threading.Thread(target=self._run, name="nemesis", daemon=True)
        self._planner.start()

    def now(self) -> float:
        return time.monotonic() - self.started

    def _run(self) -> None:
        for fault in self.schedule:
            if self._stop.wait(max(0.0, fault.at_s - self.now())):
                return
            thread = threading.Thread(target=self._one, args=(fault,), daemon=True,
                                      name=f"fault-{fault.kind}")
            thread.start()
            self._threads.append(thread)

    def stop_and_heal(self, timeout: float = 300.0) -> None:
        """No new fault; wait (bounded) until every started one is healed."""
        self._stop.set()
        if self._planner is not None:
            self._planner.join(timeout=10)
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(timeout=max(0.1, deadline - time.monotonic()))
            if thread.is_alive():
                self.problems.append(f"{thread.name} was not healed in {timeout:.0f}s")

    def _one(self, fault: Fault) -> None:
        lock = self._locks.setdefault(fault.target, threading.Lock())
        if not lock.acquire(timeout=TARGET_WAIT_S):
            fault.note = f"not injected: {fault.target} stayed hurt {TARGET_WAIT_S:.0f}s"
            return
        try:
            fault.started_s = self.now()
            INJECT[fault.kind](self.lab, fault)
            fault.healed_s = self.now()
        except Exception:
            fault.note = "the injection failed: " + traceback.format_exc(limit=3)
            self.problems.append(f"{fault.kind} at {fault.at_s:.0f}s: {fault.note}")
        finally:
            lock.release()


# -- the catalogue ---------------------------------------------------------------------
def kill_worker(lab: ChaosLab, fault: Fault) -> None:
    lab._kill_group(lab.worker(fault.victim))
    time.sleep(fault.lasts_s)
    lab.start_worker(fault.victim)
    _pool_back(lab, fault)


def kill_child(lab: ChaosLab, fault: Fault) -> None:
    """SIGKILL one pool child; healed when the worker has forked its replacement."""
    children = sorted(lab.children(fault.victim))
    if not children:
        fault.note = "no pool child to kill"
        return
    pid = children[int(fault.lasts_s * 1000 + fault.at_s) % len(children)]
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        now = lab.children(fault.victim)
        if pid not in now and len(now) >= lab.concurrency:
            return
        time.sleep(0.1)
    fault.note = "no replacement child in 90s"


def freeze_worker(lab: ChaosLab, fault: Fault) -> None:
    proc = lab.worker(fault.victim)
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGSTOP)
    try:
        time.sleep(fault.lasts_s)
    finally:
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGCONT)


def stop_worker(lab: ChaosLab, fault: Fault) -> None:
    """SIGTERM to the main process (a warm shutdown: running units finish), then a new
    worker in its place."""
    proc = lab.worker(fault.victim)
    with suppress(ProcessLookupError):
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        fault.note = f"still running {EXIT_WAIT_S:.0f}s after SIGTERM: killed"
        lab._kill_group(proc)
    lab.start_worker(fault.victim)
    _pool_back(lab, fault)


def _pool_back(lab: ChaosLab, fault: Fault) -> None:
    if not lab.wait_pool(fault.victim):
        fault.note = (fault.note + "; " if fault.note else "") + "pool not full in 90s"


def kill_redis(which: str) -> Callable[[ChaosLab, Fault], None]:
    def inject(lab: ChaosLab, fault: Fault) -> None:
        node = lab.broker if which == "broker" else lab.state
        assert node is not None
        node.kill()
        time.sleep(fault.lasts_s)
        node.start()
    return inject


def pause_redis(which: str) -> Callable[[ChaosLab, Fault], None]:
    def inject(lab: ChaosLab, fault: Fault) -> None:
        node = lab.broker if which == "broker" else lab.state
        assert node is not None
        node.signal(signal.SIGSTOP)
        try:
            time.sleep(fault.lasts_s)
        finally:
            node.signal(signal.SIGCONT)
    return inject


def stall_store(lab: ChaosLab, fault: Fault) -> None:
    """Another writer takes SQLite's write lock and keeps it."""
    writer = sqlite3.connect(lab.disk.path / "items.db", timeout=30, isolation_level=None)
    try:
        writer.execute("BEGIN IMMEDIATE")
        time.sleep(fault.lasts_s)
        writer.execute("ROLLBACK")
    finally:
        writer.close()


def fill_disk(lab: ChaosLab, fault: Fault) -> None:
    try:
        written = lab.disk.fill()
        fault.note = f"{written >> 20} MiB written"
        time.sleep(fault.lasts_s)
    finally:
        lab.disk.free()


def partition(lab: ChaosLab, fault: Fault) -> None:
    lab.net.cut(lab.host)
    try:
        time.sleep(fault.lasts_s)
    finally:
        lab.net.heal(lab.host)


INJECT: dict[str, Callable[[ChaosLab, Fault], None]] = {
    "kill_worker": kill_worker,
    "kill_child": kill_child,
    "freeze_worker": freeze_worker,
    "stop_worker": stop_worker,
    "kill_broker": kill_redis("broker"),
    "pause_broker": pause_redis("broker"),
    "kill_state": kill_redis("state"),
    "pause_state": pause_redis("state"),
    "stall_store": stall_store,
    "fill_disk": fill_disk,
    "partition": partition,
}
