"""``python -m api.token ensure``: one token, written once into the cluster's env file."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

from api.token import ensure
from utils import envfile

ROOT = Path(__file__).resolve().parents[2]


def run(env_file: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "API_TOKEN"}
    return subprocess.run([sys.executable, "-m", "api.token", "ensure"], cwd=ROOT, text=True,
                          env={**clean, "CRAWLCHAIN_ENV_FILE": env_file, **env},
                          capture_output=True, timeout=60, check=False)


def test_a_new_env_file_gets_a_token_mode_600_and_the_token_is_never_printed(
        tmp_path: Path) -> None:
    path = tmp_path / "crawlchain.env"
    path.touch(mode=0o600)
    done = run(str(path))
    assert done.returncode == 0, done.stderr
    token = envfile.read(path)["API_TOKEN"]
    assert len(token) >= 32 and token not in done.stderr + done.stdout
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_token_already_there_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "crawlchain.env"
    path.write_text("STATE_REDIS_URL=redis://h:6379/0")  # no newline at the end
    path.chmod(0o600)
    assert ensure(path) is True
    first = envfile.read(path)
    assert ensure(path) is False and envfile.read(path) == first
    assert first["STATE_REDIS_URL"] == "redis://h:6379/0"


def test_a_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "crawlchain.env"
    path.write_text("A=1\n")
    path.chmod(0o644)
    done = run(str(path))
    assert done.returncode == 2 and "chmod 600" in done.stderr
    assert "API_TOKEN" not in path.read_text()


def test_no_env_file_and_no_token_says_what_to_set() -> None:
    done = run("")
    assert done.returncode == 2 and "set API_TOKEN in the environment" in done.stderr
    assert run("", API_TOKEN="given-in-the-environment").returncode == 0
