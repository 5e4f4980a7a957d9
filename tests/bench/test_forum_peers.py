"""The deep-chain benchmark's peers store exactly the forum's expected dataset.

The plain peer needs nothing installed (it runs here with ``-I -S``: no site-packages);
the Scrapy and Crawlee peers need their venvs (``python -m bench.forum_peers`` creates
them) and are skipped, saying so, without.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from bench import forum_peers
from sandbox.forum.expected import expected
from sandbox.forum.world import ForumWorld

WORLD = ForumWorld.build(seed=5)
TRUTH = expected(WORLD)


def test_the_plain_peer_on_the_standard_library_alone_stores_exactly_the_expected_records(
        tmp_path: Path) -> None:
    out = tmp_path / "plain.jsonl"
    script = forum_peers.BENCH / "plain_peer" / "forum_crawler.py"
    with forum_peers.sandbox(WORLD) as server:
        done = subprocess.run([sys.executable, "-I", "-S", str(script), server.base_url,
                               str(out)], capture_output=True, text=True, timeout=120,
                              check=False)
        forum_peers._settle(server)
        assert done.returncode == 0, done.stderr
        assert forum_peers.check_records(out, TRUTH) == []
        assert forum_peers.check_requests(server, 0, TRUTH) == []
    assert '"failures": 4' in done.stdout


def test_a_record_missing_or_written_twice_is_reported(tmp_path: Path) -> None:
    out = tmp_path / "peer.jsonl"
    lines = [json.dumps({"type": name, **r}) for name, records in TRUTH.records.items()
             for r in records.values()]
    out.write_text("\n".join(lines) + "\n")
    assert forum_peers.check_records(out, TRUTH) == []
    out.write_text("\n".join(lines[1:] + lines[-1:]) + "\n")  # a board lost, a reaction twice
    problems = forum_peers.check_records(out, TRUTH)
    assert any(p.startswith("boards: 2 written") for p in problems)
    assert any(p.startswith("reactions:") and "written" in p for p in problems)


@pytest.mark.slow
@pytest.mark.parametrize("peer", ["scrapy", "crawlee"])
def test_each_installed_peer_stores_exactly_the_expected_records(peer: str,
                                                                 tmp_path: Path) -> None:
    if not (forum_peers.venv_dir(peer) / "bin" / "python").exists():
        pytest.skip(f"no {peer} peer venv at {forum_peers.venv_dir(peer)} "
                    "(python -m bench.forum_peers creates it)")
    with forum_peers.sandbox(WORLD) as server:
        out, outcome = forum_peers.run_peer(peer, server.base_url, tmp_path, timeout=300)
        forum_peers._settle(server)
        assert outcome.problems == []
        assert forum_peers.check_records(out, TRUTH) == []
        assert forum_peers.check_requests(server, 0, TRUTH) == []
