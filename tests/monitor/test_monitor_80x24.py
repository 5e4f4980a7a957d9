"""The live monitor in an 80x24 terminal (tmux, read back with ``capture-pane``): every
running job's full id, its state and its counts, readable as a user sees them."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chains.broker.dispatch import CeleryDispatch
from chains.demo import demo
from chains.runtime.context import Runtime
from chains.runtime.launch import launch
from sandbox.cluster import settings_for
from worker import make_app

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")


@pytest.fixture
def env(redis_socket: Path, redis_client: redis.Redis, tmp_path: Path) -> dict[str, str]:
    db = redis_client.connection_pool.connection_kwargs["db"]
    return {**os.environ, "STATE_REDIS_URL": f"unix://{redis_socket}?db={db}",
            "CELERY_BROKER_URL": f"redis+socket://{redis_socket}?virtual_host={db}",
            "STORAGE_URL": f"sqlite:///{tmp_path / 'items.db'}", "CRAWLCHAIN_ENV_FILE": ""}


@pytest.fixture
def running_jobs(env: dict[str, str]) -> Iterator[list[str]]:
    """Three demo jobs no worker takes: they stay running, their start units pending."""
    settings = settings_for(env)
    runtime = Runtime.from_settings(settings, CeleryDispatch(make_app(settings)))
    try:
        yield [launch(demo, {}, runtime, workers="off").job_id for _ in range(3)]
    finally:
        runtime.close()


def tmux(server: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", server, "-f", "/dev/null", *args], text=True,
                          capture_output=True, timeout=10, check=True).stdout


def test_the_live_monitor_at_80x24_shows_every_running_jobs_full_id_state_and_counts(
        env: dict[str, str], running_jobs: list[str]) -> None:
    server = f"crawlchain-test-{uuid.uuid4().hex[:8]}"  # a tmux server of its own
    command = " ".join(["env", *(shlex.quote(f"{k}={env[k]}") for k in (
        "STATE_REDIS_URL", "CELERY_BROKER_URL", "STORAGE_URL", "CRAWLCHAIN_ENV_FILE")),
        shlex.quote(sys.executable), "-m", "cli", "monitor", "--interval", "0.5"])
    tmux(server, "new-session", "-d", "-s", "monitor", "-x", "80", "-y", "24", "-c",
         str(ROOT), command)
    try:
        deadline = time.monotonic() + 30
        screen = ""
        while time.monotonic() < deadline:
            screen = tmux(server, "capture-pane", "-p", "-t", "monitor")
            if all(job in screen for job in running_jobs):
                break
            time.sleep(0.2)
    finally:
        tmux(server, "kill-server")
    lines = screen.splitlines()
    assert len(lines) <= 24 and all(len(line) <= 80 for line in lines), screen
    for job in running_jobs:
        [line] = [line for line in lines if job in line]
        assert "running" in line and "0/1" in line.split(job, 1)[1], screen
