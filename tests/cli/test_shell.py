"""``crawlchain shell``: a page fetched into ``response`` for working out selectors."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.server import SandboxServer, Site
from sandbox.world import World

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def server() -> Iterator[SandboxServer]:
    running = SandboxServer(Site(World(seed=3)))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()


def test_the_shell_has_the_page_as_response_and_fetches_others(server: SandboxServer) -> None:
    script = ("print(response.status, response.css('li.board::attr(data-board-id)').getall());"
              "fetch(response.urljoin('/forum/api/users/1')); print(response.json()['id'])")
    done = subprocess.run([sys.executable, "-m", "cli", "shell", f"{server.base_url}/forum/",
                           "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["200 ['general', 'help', 'showcase']", "1"]
