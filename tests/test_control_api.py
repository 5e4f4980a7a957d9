"""``./control.sh start api`` as an operator runs it: a token written once into the env file
(mode 600, never printed), the server on loopback answering with it and only with it."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import time
from pathlib import Path

import pytest
import requests

from utils import envfile

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def control(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=300, check=False)


def answered(url: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            requests.get(url, timeout=2)
            return
        except requests.ConnectionError:
            assert time.monotonic() < deadline, f"{url} did not answer within {timeout}s"
            time.sleep(0.2)


def test_start_api_writes_a_token_once_and_serves_only_with_it(tmp_path: Path) -> None:
    env_file = tmp_path / "crawlchain.env"
    env_file.touch(mode=0o600)
    port = free_port()
    env = {**{k: v for k, v in os.environ.items()
              if not k.startswith(("CELERY_", "STATE_", "STORAGE_", "API_"))},
           "CRAWLCHAIN_HOME": str(tmp_path), "CRAWLCHAIN_ENV_FILE": str(env_file),
           "API_PORT": str(port)}
    started = control(env, "start", "api")
    try:
        assert started.returncode == 0, started.stderr
        token = envfile.read(env_file)["API_TOKEN"]
        assert token not in started.stdout + started.stderr
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        health = f"http://127.0.0.1:{port}/api/health"
        answered(health)
        assert requests.get(health, timeout=10).status_code == 401
        signed = requests.get(health, headers={"Authorization": f"Bearer {token}"}, timeout=10)
        assert signed.json() == {"ok": True}
        assert "api" in control(env, "status").stdout
        again = control(env, "start", "api")
        assert "api: already running" in again.stderr
        assert envfile.read(env_file)["API_TOKEN"] == token
    finally:
        stopped = control(env, "stop", "all")
    assert stopped.returncode == 0 and "api: stopped" in stopped.stderr
