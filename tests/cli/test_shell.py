"""``crawlchain shell``: a page fetched into ``response`` for working out selectors."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from sandbox.server import SandboxServer

ROOT = Path(__file__).resolve().parents[2]


def test_the_shell_has_the_page_as_response_and_fetches_others(demo_sandbox: SandboxServer) -> None:
    script = ("print(response.status, response.css('li.board::attr(data-board-id)').getall());"
              "fetch(response.urljoin('/forum/api/users/1')); print(response.json()['id'])")
    done = subprocess.run([sys.executable, "-m", "cli", "shell", f"{demo_sandbox.base_url}/forum/",
                           "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["200 ['general', 'help', 'showcase']", "1"]
