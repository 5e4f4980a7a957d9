"""Where crawlchain's CPU goes per page: py-spy samples of the workers, split by phase.

    python -m bench.chain --profile          (or CHAINBENCH_PROFILE=1 ./control.sh bench chain)

After the measured rounds, one more crawlchain crawl (not measured: its figures are not
in the medians) runs with ``py-spy record --subprocesses --nonblocking`` attached to
each worker's main process, so the Celery consumer and every pool child are sampled,
every thread, without pausing them (py-spy reads their memory from outside; its own
CPU is its process's, not theirs). py-spy leaves idle threads out (a thread blocked in
``recv`` or ``BRPOP`` is not on a CPU), so ``samples / rate`` estimates CPU seconds;
without pausing the process it over-counts a little (a thread that has just woken is
seen on its old frame: about 1.3 x on a forum crawl, ``coverage``), so the shares come
from the samples and the milliseconds per page scale them to the workers' CPU as
measured from outside over the same crawl. (Pausing each sample, py-spy's default,
stretches the crawl and counted 6 x; ``--gil`` counts only the thread holding the
GIL, so it misses SQLite, socket and lxml work that releases it.) Redis's own CPU is
not sampled: ``redis_cost`` reports it. py-spy lives in its own venv
(``run/bench/pyspy-venv``, from ``bench/pyspy/requirements.txt``); attaching needs root
or ptrace rights (``kernel.yama.ptrace_scope`` 0).

Each sampled stack goes to the first phase, in this order, that one of its frames
belongs to: storage, ledger, dedup, metrics, publish, validation, parse, fetch,
prepare, the runtime's glue (``message.py`` and the rest of the phases), then
message/broker (Celery, kombu, billiard, redis-py, ``base_task.py``: taking a message,
decoding, acking). So pydantic serializing an item inside ``store.upsert`` is storage,
pydantic building an item inside a step is validation, the redis-py calls of the
ledger's scripts are ledger, and Celery's publish inside ``Publisher`` is publish.
"""

from __future__ import annotations

import signal
import subprocess
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil

from bench.peer_venvs import HERE, PeerVenv

ENV = "CHAINBENCH_PROFILE"  # "1": run the profiled crawl as --profile does
PYSPY = PeerVenv("pyspy-venv", HERE / "pyspy" / "requirements.txt", "py-spy")
RATE_HZ = 100

# (phase, substrings of a frame's file): the first phase any frame matches wins
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("storage", ("external_interface/storage/", "sqlite3/")),
    ("ledger", ("chains/runtime/ledger.py",)),
    ("dedup", ("external_interface/recrawl.py", "external_interface/dedup/")),
    ("metrics", ("chains/runtime/metrics.py",)),
    ("publish", ("chains/runtime/dispatch.py", "chains/broker/dispatch.py")),
    ("validation", ("pydantic/", "pydantic_core/")),
    ("parse", ("chains/runtime/pipeline/parse.py", "sites/")),
    ("fetch", ("chains/runtime/pipeline/fetch.py", "external_interface/fetch",
               "external_interface/politeness/", "external_interface/http.py")),
    ("prepare", ("chains/runtime/pipeline/prepare.py",)),
    ("runtime glue", ("chains/runtime/",)),
    ("message/broker", ("celery/", "kombu/", "billiard/", "redis/", "base_task.py",
                        "amqp/", "vine/")),
)
OTHER = "other"


def phase_of(frames: list[str]) -> str:
    for phase, marks in PHASES:
        if any(mark in frame for frame in frames for mark in marks):
            return phase
    return OTHER


def read_raw(lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """py-spy's ``--format raw`` (collapsed stacks): ``frame;frame;... count``, the
    outermost frame first (with ``--subprocesses``, ``process PID:"cmdline"`` frames)."""
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            yield stack.split(";"), int(count)


def summarize(lines: Iterable[str], pages: int, items: int, rate_hz: int = RATE_HZ,
              measured_cpu_s: float | None = None, top: int = 25) -> dict[str, Any]:
    """The phase table (share, ms of CPU per page, us per item) and the hottest leaf
    functions. ``measured_cpu_s`` (the workers' CPU over the crawl) gives ``coverage``
    and is what the milliseconds share out; without it, ``samples / rate``."""
    by_phase: Counter[str] = Counter()
    leaves: Counter[str] = Counter()
    consumer = 0
    for frames, n in read_raw(lines):
        by_phase[phase_of(frames)] += n
        leaves[frames[-1]] += n
        if sum(f.startswith("process ") for f in frames) < 2:
            consumer += n  # the worker's main process, not a pool child
    total = sum(by_phase.values())
    sampled_s = total / rate_hz
    cpu_s = measured_cpu_s or sampled_s

    def row(n: int) -> dict[str, float]:
        share = n / total if total else 0.0
        return {"share_pct": round(100 * share, 1),
                "ms_per_page": round(1000 * share * cpu_s / pages, 4) if pages else 0.0,
                "us_per_item": round(1e6 * share * cpu_s / items, 2) if items else 0.0}
    return {
        "rate_hz": rate_hz, "samples": total, "sampled_cpu_s": round(sampled_s, 2),
        "coverage": round(sampled_s / measured_cpu_s, 3) if measured_cpu_s else None,
        "pages": pages, "items": items,
        "consumer_process_pct": round(100 * consumer / total, 1) if total else 0.0,
        "by_phase": {p: row(n) for p, n in by_phase.most_common()},
        "top_leaf_functions": {f: row(n)["share_pct"] for f, n in leaves.most_common(top)},
    }


def worker_mains(root_pids: Iterable[int]) -> list[int]:
    """The Celery main process of each worker tree (under its ``timeout`` wrapper)."""
    found = []
    for pid in root_pids:
        try:
            root = psutil.Process(pid)
            found += [p.pid for p in [root, *root.children()] if p.name() != "timeout"][:1]
        except psutil.Error:
            continue
    return found


@contextmanager
def sampling(pids: list[int], outdir: Path, rate_hz: int = RATE_HZ,
             settle_s: float = 1.0) -> Iterator[list[Path]]:
    """py-spy on each pid (and its children) while the body runs; stopped with SIGINT,
    which makes it write its file. Yields the files it will have written."""
    pyspy = PYSPY.ensure()
    outs = [outdir / f"pyspy-{pid}.txt" for pid in pids]
    procs = []
    for pid, out in zip(pids, outs, strict=True):
        with out.with_suffix(".log").open("wb") as log:
            procs.append(subprocess.Popen(
                [str(pyspy), "record", "--pid", str(pid), "--subprocesses", "--nonblocking",
                 "--rate", str(rate_hz), "--format", "raw", "-o", str(out)],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL))
    time.sleep(settle_s)  # attached, pool children found
    try:
        yield outs
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs:
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
