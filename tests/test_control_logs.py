"""``control.sh`` hands LOG_LEVEL and LOG_FORMAT to what it starts, and checks them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def control(env: dict[str, str], *args: str,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout, check=False)


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CELERY_", "STATE_", "STORAGE_", "DEMO_", "LOG_"))}
    return {**clean, "CRAWLCHAIN_HOME": str(tmp_path), "DEMO_PORT": str(free_port())}


def test_json_at_debug_gives_the_sandbox_one_json_line_per_request(
        env: dict[str, str], tmp_path: Path) -> None:
    env = {**env, "LOG_LEVEL": "debug", "LOG_FORMAT": "json"}
    started = control(env, "start", "sandbox")
    try:
        assert started.returncode == 0, started.stderr
        for _ in range(3):
            urllib.request.urlopen(f"http://127.0.0.1:{env['DEMO_PORT']}/health", timeout=5)
    finally:
        assert control(env, "stop", "sandbox").returncode == 0
    lines = [json.loads(line) for line in (tmp_path / "logs" / "sandbox.log").read_text()
             .splitlines()]  # every line parses
    serving = [e for e in lines if e["message"].startswith("serving http://127.0.0.1:")]
    assert len(serving) == 1 and serving[0]["message"].endswith(env["DEMO_PORT"])
    health = [e for e in lines if e["logger"] == "sandbox.access" and "/health" in e["message"]]
    assert len(health) >= 3  # control.sh's own readiness probes come on top of these three


def test_at_the_default_level_the_sandbox_logs_no_request(
        env: dict[str, str], tmp_path: Path) -> None:
    assert control(env, "start", "sandbox").returncode == 0
    urllib.request.urlopen(f"http://127.0.0.1:{env['DEMO_PORT']}/health", timeout=5)
    control(env, "stop", "sandbox")
    text = (tmp_path / "logs" / "sandbox.log").read_text()
    assert " INFO sandbox: serving http://127.0.0.1:" in text and "/health" not in text


def test_a_wrong_level_or_format_is_refused_before_anything_starts(
        env: dict[str, str], tmp_path: Path) -> None:
    refused = control({**env, "LOG_LEVEL": "LOUD"}, "start", "sandbox")
    assert refused.returncode != 0
    assert "LOG_LEVEL=LOUD: expected DEBUG, INFO, WARNING, ERROR or CRITICAL" in refused.stderr
    refused = control({**env, "LOG_FORMAT": "xml"}, "status")
    assert "LOG_FORMAT=xml: expected text or json" in refused.stderr
    assert not (tmp_path / "run").exists()


FETCH_LOGGER = "chains.runtime.pipeline.fetch"


@dataclass
class Crawled:
    """The demo crawled at DEBUG: its summary once every worker had stopped, what the
    launcher wrote on stderr, and the log files' lines."""

    summary: dict[str, Any]
    launcher: str
    logs: dict[str, list[str]]


def crawl_demo_at_debug(env: dict[str, str], fmt: str) -> Crawled:
    """Start everything with ``LOG_LEVEL=DEBUG LOG_FORMAT=fmt``, launch the demo, stop the
    worker, then read the job's summary (``monitor --once --json``) and stop the rest.

    The demo's refill jobs (logins, devices) fetch too, and each counts its requests in
    the demo job's ``requests`` when its batch closes: one launched late may still run
    after the demo job finished, so ``demo --json``'s summary can be short of them. A
    stopped worker has closed every batch it fetched, so then the two counts must agree.
    """
    env = {**env, "LOG_LEVEL": "DEBUG", "LOG_FORMAT": fmt}
    try:
        started = control(env, "start", "all")
        assert started.returncode == 0, started.stderr[-2000:]
        launched = control(env, "launch", "demo", "--json", timeout=300)
        assert launched.returncode == 0, launched.stderr[-2000:]
        job = json.loads(launched.stdout.strip().splitlines()[-1])["job_id"]
        assert control(env, "stop", "worker", timeout=300).returncode == 0
        seen = control(env, "monitor", "--once", "--json")
        assert seen.returncode == 0, seen.stderr[-2000:]
    finally:
        control(env, "stop", "all", timeout=300)
    [summary] = [j for j in json.loads(seen.stdout.strip().splitlines()[-1])["jobs"]
                 if j["job_id"] == job]
    assert summary["state"] == "finished" and summary["totals"]["requests"] > 0
    home = Path(env["CRAWLCHAIN_HOME"])
    return Crawled(summary, launched.stderr, {
        path.name: path.read_text().splitlines() for path in (home / "logs").glob("*.log")})


@pytest.mark.slow  # a demo run under control.sh at debug: 30-40 s
def test_at_debug_the_worker_logs_one_line_per_request_and_each_job_starts_and_ends(
        env: dict[str, str]) -> None:
    crawled = crawl_demo_at_debug(env, "text")
    job, totals = crawled.summary["job_id"], crawled.summary["totals"]
    worker = crawled.logs["worker-default.log"]
    fetches = [line for line in worker if f" DEBUG {FETCH_LOGGER}: fetch " in line]
    assert len(fetches) == totals["requests"], crawled.summary["steps"]
    assert all(" site=demo step=" in line and " ms=" in line and " proxy=" in line
               for line in fetches)
    assert sum(f" job_id={job}" in line for line in fetches) >= totals["done"]
    launches = [line for line in crawled.launcher.splitlines()
                if " INFO chains.runtime.launch: " in line]
    assert len(launches) == 1 and f": job {job} started job_id={job} " in launches[0]
    ends = [line for line in worker if f"job {job} " in line and " INFO " in line]
    assert len(ends) == 1, ends
    assert f" INFO chains.runtime.ledger: job {job} finished job_id={job} " in ends[0]
    refills = {line.split("job_id=")[1].split()[0] for line in worker
               if " INFO chains.runtime.launch: job " in line}
    assert refills  # the demo's logins and devices: each started, each ended, once
    for other in refills:
        assert sum(f"job {other} started" in line for line in worker) == 1
        assert sum(f"job {other} finished" in line for line in worker) == 1


@pytest.mark.slow  # a demo run under control.sh at debug: 30-40 s
def test_with_json_every_line_of_every_log_parses_and_fetches_match_requests(
        env: dict[str, str]) -> None:
    crawled = crawl_demo_at_debug(env, "json")
    job = crawled.summary["job_id"]
    logs = {name: [json.loads(line) for line in lines] for name, lines in crawled.logs.items()
            if name != "redis.log"}  # redis-server's own format, not one of ours
    assert {"worker-default.log", "sandbox.log"} <= set(logs)
    worker = logs["worker-default.log"]
    fetches = [e for e in worker if e["logger"] == FETCH_LOGGER]
    assert len(fetches) == crawled.summary["totals"]["requests"]
    assert all({"site", "step", "url", "status", "bytes", "ms", "proxy", "job_id"} <= set(e)
               for e in fetches)
    assert {e["site"] for e in fetches} == {"demo"}
    ended = [e for e in worker if e.get("job_id") == job and e.get("event")]
    assert [(e["level"], e["event"]) for e in ended] == [("INFO", "finished")]
    [start] = [json.loads(line) for line in crawled.launcher.splitlines()
               if line.startswith("{") and f"job {job} started" in line]
    assert (start["level"], start["job_id"], start["chain"]) == ("INFO", job, "demo")
