"""docker-compose.yml keeps its promises: every service health-checked and restarted unless
stopped, every install pinned by the lock file, the workers consuming every site's queue
(as ``control.sh`` starts them), workers scalable and waiting for healthy dependencies,
one beat, a grace period above the soft time limit, RabbitMQ, monitoring and the API
behind profiles.

``docker compose config`` validates the file where the docker client has compose. The
structure is read as YAML (PyYAML, merge keys resolved as compose resolves them), and
some of it from the file's indentation: two-space service blocks under ``services:``,
which is how the file is written.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from config import TaskSettings

ROOT = Path(__file__).resolve().parent.parent
COMPOSE = ROOT / "docker-compose.yml"
TEXT = COMPOSE.read_text()
PARSED: dict[str, Any] = yaml.safe_load(TEXT)
LOCK = "requirements/constraints.txt"


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
                               "flower", "exporter", "api"}
    assert set(PARSED["services"]) == set(services())


def test_every_install_is_pinned_by_the_lock_file() -> None:
    """A service built here installs with the constraints file, which it copies in; a
    service run from a published image names its version."""
    for name, service in PARSED["services"].items():
        if "build" in service:
            dockerfile = service["build"]["dockerfile_inline"]
            installs = [line for line in dockerfile.splitlines() if "pip install" in line]
            assert installs, name
            assert all(f"-c {LOCK}" in line for line in installs), (name, installs)
            assert re.search(r"^COPY requirements requirements$", dockerfile, re.M), name
        else:
            tag = service["image"].partition(":")[2]
            assert tag and tag != "latest", (name, service["image"])


def test_every_service_restarts_unless_stopped_and_has_a_health_check() -> None:
    for name, service in PARSED["services"].items():
        assert service.get("restart") == "unless-stopped", name
        assert service["healthcheck"]["test"][0] in ("CMD", "CMD-SHELL"), name


def test_the_exporter_shows_live_workers() -> None:
    command = PARSED["services"]["exporter"]["command"]
    assert float(command[command.index("--workers") + 1]) > 0
    control = (ROOT / "control.sh").read_text()
    assert re.search(r"-m monitor\.exporter .*\n.*--workers", control)


def test_the_api_is_a_service_on_loopback_checked_with_its_token() -> None:
    api = PARSED["services"]["api"]
    assert api["profiles"] == ["api"] and api["ports"] == ["127.0.0.1:8780:8780"]
    assert api["command"][:3] == ["python", "-m", "api"]
    probe = " ".join(api["healthcheck"]["test"])
    assert "/api/health" in probe and "Bearer" in probe and "API_TOKEN" in probe


def worker_queues() -> list[str]:
    """The worker's -Q, as its container's shell would expand it (in the checkout)."""
    command = PARSED["services"]["worker"]["command"]
    if command[:2] == ["sh", "-c"]:
        script = command[2].replace("$$", "$")  # compose's escape for a literal $
        assert script.startswith("exec celery ")
        shown = subprocess.run(["sh", "-c", "printf '%s\\n' " + script.removeprefix("exec ")],
                               cwd=ROOT, capture_output=True, text=True, timeout=60,
                               check=True).stdout.splitlines()
    else:
        shown = list(command)
    return shown[shown.index("-Q") + 1].split(",")


def test_the_workers_consume_every_queue_control_sh_starts_workers_on() -> None:
    computed = subprocess.run([str(ROOT / "control.sh"), "queues"], cwd=ROOT, text=True,
                              capture_output=True, timeout=60, check=True).stdout.split()
    assert len(computed) == 1
    assert worker_queues() == computed[0].split(",")
    assert {"demo", "forum", "crawl", "crawlchain"} <= set(worker_queues())


def test_the_image_holds_every_package_and_module_the_project_installs() -> None:
    """A package left out of the image (a module turned into a package, a new layer) fails
    every container at its first import."""
    import tomllib

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    wanted = {name.rstrip("*") for name in project["packages"]["find"]["include"]}
    wanted |= {f"{module}.py" for module in project["py-modules"]}
    dockerfile = PARSED["x-app"]["build"]["dockerfile_inline"]
    copied = {name for line in dockerfile.splitlines() if line.startswith("COPY ")
              for name in line.split()[1:-1]}
    assert wanted <= copied, sorted(wanted - copied)
    assert all((ROOT / name).exists() for name in copied), sorted(
        name for name in copied if not (ROOT / name).exists())


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
