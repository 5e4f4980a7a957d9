"""The phase table adds up: the pool children's CPU the phases do not cover is Celery's
side of a task, the consumer's is the broker's, and a child's totals count from the
window's first read (a child born inside it counts whole)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from bench.chain_profile import CONSUMER, POOL_SIDE, read_dir, table, window


def write(path: Path, cpu_ns: int, phases: dict[str, int]) -> None:
    path.write_text(json.dumps({"process_cpu_ns": cpu_ns, "phases": phases}))


def test_the_window_is_the_difference_of_two_reads(tmp_path: Path) -> None:
    write(tmp_path / "phases-1.json", 1_000, {"fetch": 400, "parse": 300})
    start = read_dir(tmp_path)
    write(tmp_path / "phases-1.json", 5_000, {"fetch": 2_400, "parse": 800, "ledger": 500})
    write(tmp_path / "phases-2.json", 700, {"fetch": 600})  # a child born inside
    cpu, phases = window(start, read_dir(tmp_path))
    assert cpu == 4_000 + 700
    assert phases == Counter({"fetch": 2_600, "parse": 500, "ledger": 500})


def test_the_table_gives_shares_and_cpu_per_page_and_item() -> None:
    phases = Counter({"fetch": 3 * 10**9, "parse": 2 * 10**9, "ledger": 10**9})
    out = table(children_ns=7 * 10**9, phases=phases, consumer_s=1.0, redis_s=0.5,
                pages=1000, items=4000, measured_workers_s=8.0)

    assert out["workers_cpu_s"] == 8.0 and out["coverage"] == 1.0
    assert list(out["by_phase"]) == ["fetch", "parse", "ledger", POOL_SIDE, CONSUMER]
    assert out["by_phase"]["fetch"] == {"share_pct": 37.5, "ms_per_page": 3.0,
                                        "us_per_item": 750.0}
    assert out["by_phase"][POOL_SIDE]["ms_per_page"] == 1.0  # 7 s - 6 s in the phases
    assert out["redis-server"]["ms_per_page"] == 0.5
    assert out["all_processes_ms_per_page"] == 8.5
