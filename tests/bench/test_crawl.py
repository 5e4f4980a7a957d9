"""The properties benchmark's arithmetic: the latency bound of N pages in waves of C,
and the round robin whose first crawler rotates each round."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from bench import crawl
from bench.crawl_project import RunResult


@pytest.mark.parametrize(("pages", "concurrency", "bound"), [
    (1667, 64, 1667 / (27 * 64)),  # the case: 27 waves, 0.965
    (1667, 16, 1667 / (105 * 16)),
    (128, 64, 1.0),  # whole waves only
    (100, 16, 100 / 112),
])
def test_the_wave_bound_leaves_the_last_wave_part_empty(pages: int, concurrency: int,
                                                        bound: float) -> None:
    assert crawl.wave_bound(pages, concurrency) == pytest.approx(bound)
    assert round(crawl.wave_bound(1667, 64), 3) == 0.965


class Here:
    """This process stands for the server: its CPU is reported apart."""

    pid = os.getpid()


def test_each_round_runs_every_crawler_once_the_first_one_rotating() -> None:
    ran: list[str] = []

    def runner(name: str) -> crawl.Runner:
        def run(path: Path) -> RunResult:
            ran.append(name)
            return RunResult(name, 10, 10, 1.0, 1.0, 1.0, {
                "window_s": 1.0, "window_busy_s": 1.0, "window_own_cpu_s": 1.0})
        return run

    runners = {name: runner(name) for name in ("a", "b", "c")}
    records = crawl.alternate("t", runners, 4, Here(), quiet_wait=0, expected=10)
    assert ran == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert all(r["complete"] for r in records)
