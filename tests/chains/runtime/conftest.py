"""A runtime on real parts for the runtime's tests: the session's redis-server (this
test's own database), SQLite in the test's directory, a ``Recorder`` where messages
would go."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chains.runtime.context import Runtime
from chains.runtime.dispatch import Recorder
from config import Settings


@pytest.fixture
def runtime_env(redis_socket: Path, redis_client: redis.Redis, tmp_path: Path,
                monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The settings a ``runtime`` is built from; a test module adds its own on it."""
    db = redis_client.connection_pool.connection_kwargs["db"]
    monkeypatch.setenv("STATE_REDIS_URL", f"unix://{redis_socket}?db={db}")
    monkeypatch.setenv("STORAGE_URL", f"sqlite:///{tmp_path / 'items.db'}")
    monkeypatch.setenv("LAUNCH_WORKERS", "off")  # a Recorder keeps what no worker consumes
    return monkeypatch


@pytest.fixture
def runtime(runtime_env: pytest.MonkeyPatch) -> Iterator[Runtime]:
    built = Runtime.from_settings(Settings(), Recorder())
    yield built
    built.close()
