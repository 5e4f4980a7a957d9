from __future__ import annotations

from pathlib import Path

import pytest

from config import Settings


def test_with_nothing_set_everything_points_at_the_embedded_default(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in ("CELERY_BROKER_URL", "STATE_REDIS_URL", "STORAGE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CRAWLCHAIN_HOME", str(tmp_path))
    settings = Settings()
    assert settings.broker.broker_url == f"redis+socket://{tmp_path}/run/redis.sock"
    assert settings.state.redis_url == f"unix://{tmp_path}/run/redis.sock"
    assert settings.storage.url == f"sqlite:///{tmp_path}/data/items.db"


def test_celerys_own_variable_names_are_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CELERY_BROKER_URL", "amqp://guest@127.0.0.1//")
    monkeypatch.setenv("TASK_MAX_RETRIES", "9")
    settings = Settings()
    assert settings.broker.broker_url == "amqp://guest@127.0.0.1//"
    assert settings.task.max_retries == 9


def test_a_bad_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FETCH_DEADLINE_S", "soon")
    with pytest.raises(ValueError, match="deadline_s"):
        Settings()


def test_a_wait_longer_than_the_visibility_timeout_is_refused_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", "30")
    monkeypatch.setenv("TASK_TIME_LIMIT_S", "20")
    monkeypatch.setenv("TASK_SOFT_TIME_LIMIT_S", "15")
    monkeypatch.setenv("POLITE_MAX_WAIT_S", "45")
    with pytest.raises(ValueError, match="POLITE_MAX_WAIT_S=45"):
        Settings()
