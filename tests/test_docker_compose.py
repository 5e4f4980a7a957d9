"""docker-compose.yml keeps its promises: every service health-checked, workers scalable and
waiting for healthy dependencies, one beat, a grace period above the soft time limit,
RabbitMQ and monitoring behind profiles.

``docker compose config`` validates the file where the docker client has compose. No
YAML parser is a dependency here, so the structure is read from the file's indentation:
two-space service blocks under ``services:``, which is how the file is written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from config import TaskSettings

COMPOSE = Path(__file__).resolve().parent.parent / "docker-compose.yml"
TEXT = COMPOSE.read_text()


def services() -> dict[str, str]:
    """Service name -> its block of lines, from the ``services:`` section."""
    section = TEXT.split("\nservices:\n", 1)[1].split("\nvolumes:\n", 1)[0]
    blocks: dict[str, str] = {}
    for chunk in re.split(r"\n(?=  [a-z][\w-]*:\n)", "\n" + section):
        name, _, body = chunk.strip("\n").partition(":\n")
        if name.strip():
            blocks[name.strip()] = body
    return blocks


def depends_on(block: str) -> dict[str, str]:
    """Dependency -> its condition."""
    deps = block.split("depends_on:\n", 1)[1] if "depends_on:" in block else ""
    return dict(re.findall(r"^ {6}([\w-]+): \{condition: (\w+)", deps, re.M))


def seconds(value: str) -> int:
    number, unit = re.fullmatch(r"(\d+)(s|m)", value).groups()  # type: ignore[union-attr]
    return int(number) * (60 if unit == "m" else 1)


def test_every_piece_of_the_cluster_is_a_service() -> None:
    assert set(services()) == {"redis", "rabbitmq", "mongo", "sandbox", "worker", "beat",
                               "flower", "exporter"}


def test_every_service_has_a_health_check() -> None:
    for name, block in services().items():
        assert re.search(r"^    healthcheck:\n      test: \[", block, re.M), name


def test_redis_persists_to_an_append_only_file_on_a_volume() -> None:
    redis = services()["redis"]
    assert '"--appendonly", "yes"' in redis and "redis-data:/data" in redis
    assert '"--maxmemory-policy", "noeviction"' in redis


def test_rabbitmq_and_monitoring_are_profiles() -> None:
    blocks = services()
    assert "profiles: [rabbitmq]" in blocks["rabbitmq"]
    assert "profiles: [monitoring]" in blocks["flower"]
    assert "profiles: [monitoring]" in blocks["exporter"]
    assert "consumer_timeout 3600000" in blocks["rabbitmq"]  # 1 h > TASK_TIME_LIMIT_S


def test_workers_scale_and_wait_for_healthy_dependencies() -> None:
    worker = services()["worker"]
    assert "container_name" not in worker and "ports:" not in worker  # --scale worker=N
    deps = depends_on(worker)
    assert {"redis", "mongo", "sandbox", "rabbitmq"} <= set(deps)
    assert set(deps.values()) == {"service_healthy"}
    assert "rabbitmq: {condition: service_healthy, required: false}" in worker


def test_a_stopping_worker_gets_longer_than_the_time_limits() -> None:
    grace = re.search(r"stop_grace_period: (\w+)", services()["worker"])
    assert grace is not None
    task = TaskSettings()
    assert seconds(grace.group(1)) > task.time_limit_s > task.soft_time_limit_s


def test_exactly_one_beat_and_it_cannot_be_scaled() -> None:
    beats = [n for n, b in services().items() if re.search(r'"celery".*"beat"', b)]
    assert beats == ["beat"]
    assert "container_name:" in services()["beat"]  # compose refuses --scale beat=2


def test_every_dependency_waits_for_health() -> None:
    for name, block in services().items():
        assert set(depends_on(block).values()) <= {"service_healthy"}, name


def compose_unavailable() -> str | None:
    if shutil.which("docker") is None:
        return "no docker client on PATH"
    probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True,
                           timeout=30, check=False)
    if probe.returncode != 0:
        return f"the docker client has no compose plugin ({probe.stderr.strip().splitlines()[0]})"
    return None


@pytest.mark.parametrize("profiles", [[], ["rabbitmq", "monitoring"]])
def test_docker_compose_accepts_the_file(profiles: list[str]) -> None:
    reason = compose_unavailable()
    if reason:
        pytest.skip(f"docker compose config cannot run: {reason}")
    flags = [arg for p in profiles for arg in ("--profile", p)]
    done = subprocess.run(["docker", "compose", "-f", str(COMPOSE), *flags, "config", "-q"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
