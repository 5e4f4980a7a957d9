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
    with pytest.raises(ValueError, match=r"^FETCH_DEADLINE_S='soon': Input should be a valid "
                       r"number") as refused:
        Settings()
    assert "\n" not in str(refused.value)


def test_a_wait_longer_than_the_visibility_timeout_is_refused_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CELERY_VISIBILITY_TIMEOUT", "30")
    monkeypatch.setenv("TASK_TIME_LIMIT_S", "20")
    monkeypatch.setenv("TASK_SOFT_TIME_LIMIT_S", "15")
    monkeypatch.setenv("POLITE_MAX_WAIT_S", "45")
    with pytest.raises(ValueError, match="POLITE_MAX_WAIT_S=45"):
        Settings()


def test_the_cluster_env_file_is_read_and_the_environment_wins_over_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "crawlchain.env"
    path.write_text("CELERY_BROKER_URL=amqp://crawl:pw@rabbit:5672//\n"
                    "STATE_REDIS_URL=redis://:pw@state:6379/0\nTASK_MAX_RETRIES=7\n")
    path.chmod(0o600)
    monkeypatch.setenv("CRAWLCHAIN_ENV_FILE", str(path))
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("STATE_REDIS_URL", raising=False)
    monkeypatch.setenv("TASK_MAX_RETRIES", "3")
    settings = Settings()
    assert settings.broker.broker_url == "amqp://crawl:pw@rabbit:5672//"
    assert settings.state.redis_url == "redis://:pw@state:6379/0"
    assert settings.task.max_retries == 3


def test_a_cluster_env_file_others_can_read_is_refused_before_any_setting(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    path = tmp_path / "crawlchain.env"
    path.write_text("STATE_REDIS_URL=redis://:hunter2@state:6379/0\n")
    path.chmod(0o644)
    monkeypatch.setenv("CRAWLCHAIN_ENV_FILE", str(path))
    with pytest.raises(ValueError, match="chmod 600") as refused:
        Settings()
    assert str(path) in str(refused.value) and "hunter2" not in str(refused.value)


def test_a_refused_value_is_quoted_with_its_password_masked(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROXY_URLS", '{"eu": "http://crawler:hunter2@10.0.0.7:3128"}')
    with pytest.raises(ValueError, match="PROXY_") as caught:
        Settings()
    assert "hunter2" not in str(caught.value) and "crawler:***@10.0.0.7" in str(caught.value)
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_a_dead_workers_slot_is_held_only_as_long_as_a_fetch_may_last(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("POLITE_LEASE_TTL_S", raising=False)
    monkeypatch.setenv("FETCH_DEADLINE_S", "4")
    assert Settings().lease_ttl_s == 14.0
    monkeypatch.setenv("POLITE_LEASE_TTL_S", "90")
    assert Settings().lease_ttl_s == 90.0


def test_a_lease_shorter_than_a_fetch_is_refused_by_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FETCH_DEADLINE_S", "30")
    monkeypatch.setenv("POLITE_LEASE_TTL_S", "20")
    with pytest.raises(ValueError, match=r"POLITE_LEASE_TTL_S=20\.0 must exceed FETCH_DEADLINE_S"):
        Settings()
