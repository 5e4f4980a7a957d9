"""Flower, started by ``control.sh start flower`` against the cluster's broker, answers on
loopback and lists the job's tasks (task events are off in ``worker.py`` until Flower, or
``control.sh start flower`` at once, turns them on)."""

from __future__ import annotations

import json
import socket
import subprocess
import urllib.error
import urllib.request
from typing import Any

import pytest

from sandbox.cluster import ROOT, Cluster
from tests.monitor.conftest import demo, wait_until

pytestmark = pytest.mark.integration


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def control(env: dict[str, str], *args: str) -> None:
    done = subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr


def api(url: str) -> Any:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return json.loads(reply.read())
    except (urllib.error.URLError, ConnectionError):
        return None


def test_flower_answers_on_loopback_and_lists_the_jobs_tasks(cluster: Cluster) -> None:
    port = free_port()
    # Flower 2 serves its API without auth only when told to; fine on loopback
    env = {**cluster.env, "FLOWER_PORT": str(port), "FLOWER_UNAUTHENTICATED_API": "true"}
    base = f"http://127.0.0.1:{port}"
    control(env, "start", "flower")
    try:
        wait_until(lambda: api(f"{base}/api/tasks?limit=1") is not None, 30, "flower's API")
        job = cluster.launch(demo, page=1)
        job.wait(timeout=120)
        mine = wait_until(lambda: [t for t in (api(f"{base}/api/tasks?limit=5000") or {}).values()
                                   if job.job_id in str(t.get("args"))], 20, "the job's tasks")
    finally:
        control(env, "stop", "flower")
    names = {t["name"] for t in mine}
    assert names >= {"demo.h5.feed", "demo.h5.user_info", "demo.app.detail"}
    assert all(t["state"] == "SUCCESS" for t in mine if t["name"] == "demo.h5.feed")
