"""CPU and memory of process trees during a measured window, and a quiet-machine wait.

A crawl is several processes (broker, workers and their pool children, servers):
``Watch`` samples each tree's processes every ``interval`` seconds from a thread,
keeping every process's latest CPU time and highest RSS. CPU over a window is the
sum over processes of (last seen - first seen, or 0 for processes born inside
the window), so a pool child that appears mid-run is counted from its birth.
``machine_busy_s`` is the whole machine's busy CPU: minus ours it is the load of
other tenants during a run, recorded so a contaminated run can be told apart.
"""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import psutil

MB = 1024 * 1024


def tree(pid: int) -> list[psutil.Process]:
    """The process and all its descendants that are alive now."""
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


@dataclass
class Sample:
    """Per pid: CPU seconds (user + system) and the highest RSS seen, in bytes."""

    cpu: dict[int, float] = field(default_factory=dict)
    rss: dict[int, int] = field(default_factory=dict)
    names: dict[int, str] = field(default_factory=dict)


class Watch:
    """Samples named process trees until stopped; read CPU deltas and peak RSS per process."""

    def __init__(self, roots: dict[str, int], interval: float = 0.1) -> None:
        self.roots = dict(roots)
        self.interval = interval
        self.samples: dict[str, Sample] = {name: Sample() for name in roots}
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="proctree", daemon=True)

    def __enter__(self) -> Watch:
        self.sample()
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)

    def _loop(self) -> None:
        while not self.stopped.wait(self.interval):
            self.sample()

    def sample(self) -> None:
        """Record every live process of every tree now."""
        with self.lock:
            for name, pid in self.roots.items():
                into = self.samples[name]
                for proc in tree(pid):
                    self._record(into, proc)

    @staticmethod
    def _record(into: Sample, proc: psutil.Process) -> None:
        try:
            with proc.oneshot():
                times, rss, name = proc.cpu_times(), proc.memory_info().rss, proc.name()
        except psutil.Error:
            return
        into.cpu[proc.pid] = times.user + times.system
        into.rss[proc.pid] = max(rss, into.rss.get(proc.pid, 0))
        into.names[proc.pid] = name

    def snapshot(self) -> dict[str, dict[int, float]]:
        """CPU per pid per tree, sampled now: the start or end mark of a window."""
        self.sample()
        with self.lock:
            return {name: dict(s.cpu) for name, s in self.samples.items()}

    def peak_rss_mb(self, names: Iterable[str], skip: tuple[str, ...] = ("timeout",)) -> float:
        """The largest RSS any single process of these trees reached (wrappers skipped)."""
        with self.lock:
            peaks = [rss for n in names for pid, rss in self.samples[n].rss.items()
                     if self.samples[n].names.get(pid) not in skip]
        return round(max(peaks, default=0) / MB, 1)


def cpu_between(start: dict[str, dict[int, float]], end: dict[str, dict[int, float]],
                names: Iterable[str]) -> float:
    """CPU seconds the named trees used between two snapshots."""
    return sum(cpu - start.get(name, {}).get(pid, 0.0)
               for name in names for pid, cpu in end.get(name, {}).items())


def machine_busy_s() -> float:
    """Busy CPU seconds of the whole machine since boot, all cores."""
    t = psutil.cpu_times()
    return float(t.user + t.nice + t.system + getattr(t, "irq", 0.0)
                 + getattr(t, "softirq", 0.0) + getattr(t, "steal", 0.0))


def wait_quiet(max_busy_pct: float = 20.0, quiet_s: int = 2, max_wait_s: float = 60.0) -> float:
    """Wait until the machine is below ``max_busy_pct`` for ``quiet_s`` seconds in a row.

    Bounded: gives up after ``max_wait_s`` (the run's foreign CPU is recorded anyway).
    Returns the seconds waited.
    """
    started = time.monotonic()
    quiet = 0
    psutil.cpu_percent(None)
    while time.monotonic() - started < max_wait_s and quiet < quiet_s:
        time.sleep(1.0)
        quiet = quiet + 1 if psutil.cpu_percent(None) < max_busy_pct else 0
    return round(time.monotonic() - started, 1)


def stop(proc: subprocess.Popen[Any]) -> None:
    """SIGTERM, then SIGKILL after 10 s: a server a bench started ends either way."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
