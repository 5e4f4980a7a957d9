"""The live dashboard renders to text: jobs with moving progress bars, queues, workers."""

from __future__ import annotations

import io
import re
import time
from typing import Any

import pytest
import redis
from rich.console import Console

from chains.runtime.report import FILLED
from monitor.alerts import Rules, Watcher
from monitor.dashboard import Dashboard, live, reasons_table, render_text
from monitor.snapshot import snapshot
from sandbox.cluster import Cluster
from tests.monitor.conftest import demo, run_module
from tests.monitor.test_alerts import Collect


def job_line(text: str, job_id: str) -> str:
    [line] = [line for line in text.splitlines() if job_id in line]
    return line


def finished_units(line: str) -> int:
    match = re.search(r"(\d+)/(\d+)", line)
    assert match, line
    return int(match.group(1))


def a_view(job_id: str, finished: int, known: int, state: str = "running") -> dict[str, Any]:
    totals = {"spawned": known, "done": finished, "failed": 0, "skipped": 0, "items": 0}
    return {"job_id": job_id, "state": state, "pending": known - finished, "totals": totals,
            "elapsed_s": 10.0, "failure_groups": [],
            "progress": {"finished": finished, "known": known, "fraction": finished / known},
            "throughput": {"average": finished / 10, "now": None}}


def a_snapshot(taken_at: float, *views: dict[str, Any], **sections: Any) -> dict[str, Any]:
    return {"taken_at": taken_at, "jobs": list(views), "workers": {}, "queues": {"demo": 3},
            "sites": {}, "pools": {}, **sections}


def test_pages_per_second_come_from_two_refreshes_when_workers_count_no_pace() -> None:
    dashboard = Dashboard()
    first = render_text(dashboard, a_snapshot(100.0, a_view("j1", 10, 100)))
    second = render_text(dashboard, a_snapshot(102.0, a_view("j1", 30, 100)))
    assert "n/a" in job_line(first, "j1")
    assert "10.0/s" in job_line(second, "j1")  # (30 - 10) / 2 s


def test_a_section_another_module_fills_is_drawn_as_a_table() -> None:
    pools = {"cookie:demo": {"ready": 4, "resting": 30}}
    text = render_text(Dashboard(), a_snapshot(1.0, pools=pools))
    assert re.search(r"cookie:demo\s+│\s+4\s+│\s+30", text), text
    assert "sites: no data yet" in text
    assert "pools: no data yet" in render_text(Dashboard(), a_snapshot(1.0))


def test_sites_and_throttle_are_named_columns_in_human_units() -> None:
    sites = {"demo": {"rate_per_s": 4.0, "rate_estimate_per_s": 3.25, "max_concurrency": 8,
                      "leases_held": 2, "cooldown_remaining_s": 30.0, "next_slot_in_s": 0.25,
                      "penalties": 1}}
    throttle = {"forum": {"phase": "slow-start", "rate_per_s": 12.5, "ceiling_per_s": None,
                          "window": 6, "latency_s": 0.042, "rate_limited": 0,
                          "server_errors": 3}}
    text = render_text(Dashboard(), a_snapshot(1.0, sites=sites, throttle=throttle), 80)
    assert re.search(r"demo +4\.0/s +3\.2/s +2/8 +30\.0 s +250 ms +1", text), text
    assert re.search(r"forum +slow-start +12\.5/s +- +6 +42 ms +0 +3", text), text


def test_at_80_columns_the_jobs_table_keeps_full_ids_state_and_counts() -> None:
    views = [a_view(f"{n:016x}", 10 * n, 100) for n in range(1, 4)]
    text = render_text(Dashboard(), a_snapshot(1.0, *views), 80)
    assert max(len(line) for line in text.splitlines()) <= 80
    for view in views:
        line = job_line(text, view["job_id"])
        assert "running" in line and f"{view['progress']['finished']}/100" in line


def test_a_queue_no_live_worker_consumes_says_how_to_start_one() -> None:
    text = render_text(Dashboard(), a_snapshot(1.0, consumers={"forum": ["w@h"]}), 80)
    assert re.search(r"demo +3 +none: ./control.sh start worker", text), text


def test_error_reasons_are_shown_with_secrets_masked() -> None:
    group = {"count": 2, "reason": "NetworkError: via http://crawler:hunter2@10.0.0.7:3128",
             "step": "feed", "error": "NetworkError",
             "examples": [{"unit_id": "u1", "url": "https://x/?token=hunter2",
                           "params": {"url": "https://x/?token=hunter2"}}]}
    table = reasons_table([a_view("j1", 1, 3) | {"failure_groups": [group]}])
    console = Console(record=True, width=200, file=io.StringIO())
    console.print(table)
    text = console.export_text()
    assert "hunter2" not in text and "crawler:***@10.0.0.7" in text and "token=***" in text


def test_alerts_fired_while_watching_are_shown() -> None:
    clock = [0.0]
    dashboard = Dashboard(Watcher(Rules(stall_s=1.0), Collect(), clock=lambda: clock[0]))
    render_text(dashboard, a_snapshot(0.0, a_view("j1", 10, 100)))
    clock[0] = 5.0
    text = render_text(dashboard, a_snapshot(5.0, a_view("j1", 10, 100)))
    assert "alerts" in text and "stall" in text


def test_live_view_redraws_until_told_to_stop_and_survives_an_outage() -> None:
    taken = iter([a_snapshot(1.0, a_view("j1", 10, 100)), None,
                  a_snapshot(2.0, a_view("j1", 20, 100))])

    def take() -> dict[str, Any]:
        snap = next(taken)
        if snap is None:
            raise redis.ConnectionError("state plane away")
        return snap

    calls = iter(range(4))
    console = Console(record=True, width=160, file=io.StringIO(), force_terminal=True)
    live(take, Dashboard(), console, interval=0.01, until=lambda: next(calls) >= 3)
    assert "20/100" in console.export_text()


@pytest.mark.integration
def test_dashboard_shows_a_running_jobs_progress_bar_moving(cluster: Cluster) -> None:
    res = cluster.runtime
    job = cluster.launch(demo, page=1)
    dashboard = Dashboard()
    renders: list[tuple[int, str]] = []
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = render_text(dashboard, snapshot(res.redis, cluster.app, inspect_timeout=0.1))
        line = job_line(text, job.job_id)
        if "running" not in line:
            break
        renders.append((line.count(FILLED), text))
        if len({filled for filled, _ in renders}) >= 2:
            break
        time.sleep(0.1)
    job.wait(timeout=120)  # leave the cluster idle for the next test
    assert len({filled for filled, _ in renders}) >= 2, "the bar did not move while running"
    (bar_a, text_a), (bar_b, text_b) = renders[0], renders[-1]
    assert bar_a < bar_b
    assert finished_units(job_line(text_a, job.job_id)) < finished_units(
        job_line(text_b, job.job_id))
    for heading in ("jobs", "queues", "workers"):
        assert heading in text_b


@pytest.mark.integration
def test_once_draws_the_dashboard_as_text(cluster: Cluster) -> None:
    out = run_module(cluster, "monitor", "--once", "--inspect-timeout", "1")
    assert "crawlchain" in out and "queues" in out and "w0@" in out
