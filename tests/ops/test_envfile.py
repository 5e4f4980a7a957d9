"""``python -m ops.envfile export``: what control.sh evaluates, exact in a shell."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from utils.envfile import CHECKOUT


def env_file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "crawlchain.env"
    path.write_text(text)
    path.chmod(0o600)
    return path


def test_the_export_command_evaluates_to_the_exact_values_in_a_shell(tmp_path: Path) -> None:
    path = env_file(tmp_path, "WEIRD='a b $c \"d\" `e`'\n")
    shell = (f"eval \"$({sys.executable} -m ops.envfile export)\"; "
             "printf '%s' \"$WEIRD\"")
    done = subprocess.run(["bash", "-c", shell], cwd=CHECKOUT, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "CRAWLCHAIN_ENV_FILE": str(path)},
                          timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout == 'a b $c "d" `e`'
