"""This process's runtime: ``warm`` builds it at a worker's start, and gives up within its
wait (leaving the build to the first message) when the state Redis does not answer."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from chains.broker import session
from config import get_settings


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    get_settings.cache_clear()
    session.reset()
    yield monkeypatch
    get_settings.cache_clear()
    session.reset()


def test_warm_builds_the_runtime_that_the_first_message_then_uses(
        fresh: pytest.MonkeyPatch, redis_socket: Path, redis_client: redis.Redis,
        tmp_path: Path) -> None:
    db = redis_client.connection_pool.connection_kwargs["db"]
    fresh.setenv("STATE_REDIS_URL", f"unix://{redis_socket}?db={db}")
    fresh.setenv("CELERY_BROKER_URL", f"redis+socket://{redis_socket}?virtual_host={db}")
    fresh.setenv("STORAGE_URL", f"sqlite:///{tmp_path / 'items.db'}")
    assert session.warm() is True
    built = session.current()
    assert session.current() is built  # no second build on first use
    assert built.redis.ping()


def test_warm_gives_up_within_its_wait_when_the_state_redis_is_away(
        fresh: pytest.MonkeyPatch) -> None:
    fresh.setenv("STATE_REDIS_URL", "unix:///nonexistent/redis.sock")
    started = time.monotonic()
    assert session.warm(wait_s=1.0) is False
    assert time.monotonic() - started < 3.0  # a pool child's start is not held for minutes
