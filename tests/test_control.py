"""``control.sh`` as a user runs it: start, launch from a shell, status, stop, demo."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from sandbox.world import World

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CELERY_", "STATE_", "STORAGE_", "DEMO_", "TASK_"))}
    return {**clean, "CRAWLCHAIN_HOME": str(tmp_path), "DEMO_PORT": str(free_port())}


def control(env: dict[str, str], *args: str,
            timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def recorded_pids(home: Path) -> list[int]:
    return [int(p.read_text()) for p in (home / "run").glob("*.pid")]


def test_workers_started_by_control_sh_finish_a_chain_launched_from_python_c(
        env: dict[str, str]) -> None:
    home = Path(env["CRAWLCHAIN_HOME"])
    started = control(env, "start", "all")
    pids = recorded_pids(home)
    try:
        assert started.returncode == 0, started.stderr
        assert "worker-default" in control(env, "status").stdout
        launch = subprocess.run(
            [sys.executable, "-c", "import json; from chains.cluster import launch; "
             "from chains.demo import demo; "
             "print(json.dumps(launch(demo, page=1).wait(timeout=120)))"],
            cwd=ROOT, env={**env, "DEMO_BASE_URL": f"http://127.0.0.1:{env['DEMO_PORT']}"},
            text=True, capture_output=True, timeout=180, check=False)
        assert launch.returncode == 0, launch.stderr
        status = json.loads(launch.stdout.strip().splitlines()[-1])
        assert status["state"] == "finished"
        for step, want in World().expected().items():
            assert status["steps"][step]["done"] == want["units"], step
            assert status["steps"][step]["items"] == want["items"], step
    finally:
        stopped = control(env, "stop", "all")
    assert stopped.returncode == 0, stopped.stderr
    assert len(pids) >= 3 and not any(alive(p) for p in pids)
    assert processes_of(home) == []
    assert "nothing running" in control(env, "status").stdout


def test_demo_json_ends_with_the_summary_and_leaves_no_process(env: dict[str, str]) -> None:
    home = Path(env["CRAWLCHAIN_HOME"])
    result = control(env, "demo", "--json", timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = json.loads(result.stdout.strip().splitlines()[-1])
    assert summary["state"] == "finished" and summary["job_id"]
    assert set(summary["steps"]) == set(World().expected())
    for counts in [*summary["steps"].values(), summary["totals"]]:
        assert {"done", "failed", "skipped", "retried", "items"} <= set(counts)
    assert summary["totals"]["items"] == sum(s["items"] for s in World().expected().values())
    totals = summary["totals"]  # the demo's sandbox defends itself; one exit is burnt
    assert totals["requests"] >= totals["done"] and totals["bans"] >= 1
    assert totals["rotations"] >= 1 and totals["captcha_solves"] >= 1
    assert totals["cookie_refreshes"] >= 1
    assert isinstance(summary["elapsed_s"], float)
    assert not list((home / "run").glob("*.pid"))
    assert processes_of(home) == []
    # with everything stopped, the monitor and the job list read the stopped store
    monitor = control(env, "monitor", "--once", "--json", timeout=120)
    assert monitor.returncode == 0 and "Traceback" not in monitor.stderr, monitor.stderr
    assert "stopped" in monitor.stderr
    [job] = [j for j in json.loads(monitor.stdout.strip().splitlines()[-1])["jobs"]
             if j["job_id"] == summary["job_id"]]
    assert job["state"] == "finished" and job["totals"] == summary["totals"]
    listed = control(env, "jobs", "--json", timeout=120)
    assert listed.returncode == 0 and "Traceback" not in listed.stderr, listed.stderr
    [row] = [r for r in json.loads(listed.stdout.strip().splitlines()[-1])
             if r["job_id"] == summary["job_id"]]
    assert (row["chain"], row["state"], row["items"]) == ("demo", "finished",
                                                          summary["totals"]["items"])
    assert processes_of(home) == []  # the copy it read was stopped again


def processes_of(home: Path) -> list[psutil.Process]:
    """Live processes started for this ``CRAWLCHAIN_HOME`` (they inherit it)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get("CRAWLCHAIN_HOME") == str(home):
                found.append(proc)
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return found
