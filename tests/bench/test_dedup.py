"""The dedup benchmark runs end to end on a small count and prints its JSON last."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from bench import dedup


def test_bench_prints_both_stores_figures_as_json(
    redis_socket: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["--entries", "3000", "--probes", "3000", "--batch", "1000", "--json"]
    assert dedup.main([*argv, "--redis-socket", str(redis_socket)]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    figures = {"bytes_per_entry", "mark_ops_per_s", "check_ops_per_s", "false_duplicate_rate"}
    assert figures <= result.keys() and figures <= result["peer"].keys()
    assert result["entries"] == 3000
    assert result["false_duplicate_rate"] == 0.0


def test_bench_on_a_given_server_leaves_no_keys_behind(redis_socket: Path) -> None:
    argv = ["--entries", "1000", "--probes", "1000", "--redis-socket", str(redis_socket)]
    dedup.main(argv)
    with redis.Redis(unix_socket_path=str(redis_socket)) as client:
        assert not list(client.scan_iter(match="cc:*bench*"))
