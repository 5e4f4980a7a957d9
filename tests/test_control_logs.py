"""``control.sh`` hands LOG_LEVEL and LOG_FORMAT to what it starts, and checks them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def control(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(ROOT / "control.sh"), *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=120, check=False)


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
