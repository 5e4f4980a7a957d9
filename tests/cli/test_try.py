"""``crawlchain try``: one step on one live URL, printed as a person reads it or as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from sandbox.forum.expected import expected
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


def crawlchain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})


def test_try_prints_a_steps_items_and_what_it_would_spawn(server: SandboxServer) -> None:
    want = expected(server.site.forum.world)
    thread_id = sorted(want.records["threads"])[0]
    title = want.records["threads"][thread_id]["title"]
    done = crawlchain("try", "forum.web.thread", f"{server.base_url}/forum/t/{thread_id}")
    assert done.returncode == 0, done.stderr
    assert "status 200" in done.stdout and "1 threads" in done.stdout
    assert title[:30] in done.stdout
    assert "forum.thread -> user" in done.stdout and "forum.thread -> reactions" in done.stdout


def test_try_json_is_one_object_and_a_failing_page_exits_1(server: SandboxServer) -> None:
    gone = next(url for url, code in expected(server.site.forum.world).failures.items())
    done = crawlchain("try", "forum.web.thread", f"{server.base_url}{gone}", "--json")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["status"] in (404, 410)
    assert result["error"].startswith(("NotFound", "Gone"))
