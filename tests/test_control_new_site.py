"""A new site scaffolded while a worker runs, as the README's "Your first site" goes: its
launch is refused with the command that fixes it (the worker does not know the site's
queue), and after that command the same launch finishes. In a copy of the checkout
(``new-site`` writes files), run by ``control.sh`` and ``python -m cli`` as a user runs
them."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.test_control import free_port

pytestmark = [pytest.mark.slow, pytest.mark.integration]

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The committed files, copied with their times (``control.sh`` sees the venv's
    install as up to date and installs nothing), and this checkout's venv."""
    stamp = ROOT / ".venv" / ".installed-dev"
    newest = max((ROOT / "pyproject.toml").stat().st_mtime,
                 (ROOT / "requirements" / "constraints.txt").stat().st_mtime)
    if not stamp.is_file() or stamp.stat().st_mtime <= newest:
        pytest.skip("the venv's dev install is not up to date: ./control.sh setup would "
                    "reinstall it from the copy")
    target = tmp_path / "checkout"
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                            check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file() and not name.startswith(("tests/", "bench/", "docs/")):
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    (target / ".venv").symlink_to(ROOT / ".venv")
    return target


@pytest.fixture
def env(checkout: Path, tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("CELERY_", "STATE_", "STORAGE_", "DEMO_", "TASK_",
                                  "LAUNCH_"))}
    return {**clean, "CRAWLCHAIN_HOME": str(tmp_path / "home"), "CRAWLCHAIN_ENV_FILE": "",
            "PYTHONPATH": str(checkout), "DEMO_PORT": str(free_port())}


@pytest.fixture
def shop(checkout: Path, env: dict[str, str]) -> Iterator[str]:
    """The practice shop of the README, on a port of its own."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "sandbox.polite", "--port", str(port),
                             "--no-defences"], cwd=checkout, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the shop did not start"
                time.sleep(0.1)
        yield base
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def run(checkout: Path, env: dict[str, str], *cmd: str,
        timeout: float = 180) -> subprocess.CompletedProcess[str]:
    return subprocess.run(list(cmd), cwd=checkout, env=env, text=True, capture_output=True,
                          timeout=timeout, check=False)


def test_a_site_scaffolded_while_a_worker_runs_is_refused_then_finishes_after_a_restart(
        checkout: Path, env: dict[str, str], shop: str) -> None:
    control, crawlchain = str(checkout / "control.sh"), (sys.executable, "-m", "cli")
    start = f"url={shop}/category/kitchen?page=1"
    try:
        started = run(checkout, env, control, "start", "worker")
        assert started.returncode == 0, started.stderr
        made = run(checkout, env, *crawlchain, "new-site", "shop", "--base-url", shop)
        assert made.returncode == 0, made.stderr
        refused = run(checkout, env, *crawlchain, "launch", "shop", start, timeout=10)
        assert refused.returncode == 2 and "Traceback" not in refused.stderr
        [line] = refused.stderr.splitlines()
        assert "do not consume queue 'shop'" in line and "./control.sh restart worker" in line
        restarted = run(checkout, env, control, "restart", "worker")
        assert restarted.returncode == 0, restarted.stderr
        done = run(checkout, env, *crawlchain, "launch", "shop", start, "--json",
                   "--timeout", "120")
        assert done.returncode == 0, done.stderr[-2000:]
        summary = json.loads(done.stdout.strip().splitlines()[-1])
        assert summary["state"] == "finished" and summary["totals"]["items"] > 0
    finally:
        run(checkout, env, control, "stop")
