"""``crawlchain try``: one step on one live URL, printed as a person reads it or as JSON."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from sandbox.forum.expected import expected
from sandbox.server import SandboxServer

ROOT = Path(__file__).resolve().parents[2]


def crawlchain(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cli", *args], cwd=ROOT, text=True,
                          capture_output=True, timeout=120, check=False,
                          env={**os.environ, "COLUMNS": "200"})


def test_try_prints_a_steps_items_and_what_it_would_spawn(demo_sandbox: SandboxServer) -> None:
    want = expected(demo_sandbox.site.forum.world)
    thread_id = sorted(want.records["threads"])[0]
    title = want.records["threads"][thread_id]["title"]
    done = crawlchain("try", "forum.web.thread", f"{demo_sandbox.base_url}/forum/t/{thread_id}")
    assert done.returncode == 0, done.stderr
    assert "status 200" in done.stdout and "1 threads" in done.stdout
    assert title[:30] in done.stdout
    assert "forum.thread -> user" in done.stdout and "forum.thread -> reactions" in done.stdout


def test_try_json_is_one_object_and_a_failing_page_exits_1(demo_sandbox: SandboxServer) -> None:
    gone = next(url for url, code in expected(demo_sandbox.site.forum.world).failures.items())
    done = crawlchain("try", "forum.web.thread", f"{demo_sandbox.base_url}{gone}", "--json")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["status"] in (404, 410)
    assert result["error"].startswith(("NotFound", "Gone"))
