"""Where crawlchain's CPU goes per page: the workers' CPU split by phase, exactly.

    python -m bench.chain --profile          (or CHAINBENCH_PROFILE=1 ./control.sh bench chain)

After the measured rounds, one more crawlchain crawl (not measured: its figures are not
in the medians) runs its worker as ``bench.profiled_worker``: the same Celery worker,
whose pool children time the runtime's phases by each thread's CPU clock
(``bench.phase_meter`` says what is wrapped and why not a sampling profiler). The
children's files are read just before the launch and after the job finished; the
difference is the crawl's. The table's rows, per page and per item:

- each phase's own CPU (nested phases taken off: ``ledger`` inside ``close`` is ledger,
  ``storage`` inside ``save`` is storage, ``validation`` inside ``parse`` is validation);
- ``message/broker (pool child)``: a child's CPU the phases do not cover (Celery's side
  of a task: receiving it over the pool's pipe, tracing, acking through the consumer);
- ``message/broker (consumer)``: the worker's main process (BRPOP, decoding, handing
  messages to the pool), measured from outside;
- ``redis-server``: the state plane and broker's CPU (``redis_cost`` reports its
  commands), apart from the workers' total.

``coverage`` holds the table's workers' total against the workers' CPU measured from
outside over the same window (about 1). The meter costs a few per cent: the profiled
crawl's pages/s are not the benchmark's.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any

import psutil

ENV = "CHAINBENCH_PROFILE"  # "1": run the profiled crawl as --profile does
FLUSH_WAIT_S = 1.5  # the children rewrite their files every second
POOL_SIDE = "message/broker (pool child)"
CONSUMER = "message/broker (consumer)"
REDIS = "redis-server"

Files = dict[str, dict[str, Any]]  # file name -> {"process_cpu_ns", "phases"}


def read_dir(outdir: Path) -> Files:
    """Every pool child's totals so far."""
    return {f.name: json.loads(f.read_text()) for f in sorted(outdir.glob("phases-*.json"))}


def snapshot(outdir: Path) -> Files:
    """The totals once the children have written what came before (a mark of the window)."""
    time.sleep(FLUSH_WAIT_S)
    return read_dir(outdir)


def window(start: Files, end: Files) -> tuple[int, Counter[str]]:
    """The pool children's CPU and each phase's over the window, in nanoseconds; a child
    born inside the window counts whole."""
    cpu, phases = 0, Counter[str]()
    for name, now in end.items():
        then = start.get(name, {"process_cpu_ns": 0, "phases": {}})
        cpu += now["process_cpu_ns"] - then["process_cpu_ns"]
        phases.update({p: ns - then["phases"].get(p, 0) for p, ns in now["phases"].items()})
    return cpu, phases


def main_pid(wrapper: int) -> int | None:
    """The worker's main process under its ``timeout`` wrapper (the consumer)."""
    try:
        return next((c.pid for c in psutil.Process(wrapper).children()), None)
    except psutil.Error:
        return None


def process_cpu_s(pid: int | None) -> float:
    try:
        times = psutil.Process(pid).cpu_times() if pid else None
    except psutil.Error:
        return 0.0
    return times.user + times.system if times else 0.0


def table(children_ns: int, phases: Counter[str], consumer_s: float, redis_s: float,
          pages: int, items: int, measured_workers_s: float | None = None) -> dict[str, Any]:
    """The phase table: share of the workers' CPU, ms per page, us per item."""
    rows_s = {phase: ns / 1e9 for phase, ns in phases.items() if ns > 0}
    rows_s[POOL_SIDE] = max(0.0, (children_ns - sum(phases.values())) / 1e9)
    rows_s[CONSUMER] = consumer_s
    workers_s = sum(rows_s.values())

    def row(seconds: float) -> dict[str, float]:
        return {"share_pct": round(100 * seconds / workers_s, 1) if workers_s else 0.0,
                "ms_per_page": round(1000 * seconds / pages, 4) if pages else 0.0,
                "us_per_item": round(1e6 * seconds / items, 2) if items else 0.0}
    ordered = sorted(rows_s.items(), key=lambda kv: -kv[1])
    return {
        "pages": pages, "items": items, "workers_cpu_s": round(workers_s, 3),
        "coverage": round(workers_s / measured_workers_s, 3) if measured_workers_s else None,
        "by_phase": {phase: row(s) for phase, s in ordered},
        REDIS: {"cpu_s": round(redis_s, 3), "ms_per_page": row(redis_s)["ms_per_page"],
                "us_per_item": row(redis_s)["us_per_item"]},
        "all_processes_ms_per_page": round(1000 * (workers_s + redis_s) / pages, 4)
        if pages else None,
    }
