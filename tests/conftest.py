"""Fixtures shared by every test: a real redis-server (>= 7, as ``ops.embedded_redis``
finds it), a private vhost on the local RabbitMQ, and no cluster environment file."""

from __future__ import annotations

import itertools
import os
import shutil
import socket
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from ops import embedded_redis
from sandbox.server import SandboxServer, Site
from sandbox.world import World

_db = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    """A developer's ``crawlchain.env`` (production URLs, secrets) never reaches a test,
    a module imported while collecting, or a process a test starts; tests that want a
    file set ``CRAWLCHAIN_ENV_FILE`` themselves. ``control.sh`` exports the demo's
    ``DEMO_BASE_URL`` (its sandbox's port); a launch in a test reads its site's URL from
    the test's own env file or cluster, as it does under bare ``pytest``."""
    os.environ["CRAWLCHAIN_ENV_FILE"] = ""
    os.environ.pop("DEMO_BASE_URL", None)


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


# -- RabbitMQ ----------------------------------------------------------------------
AMQP_ADDRESS = os.environ.get("CRAWLCHAIN_TEST_AMQP", "guest:guest@127.0.0.1:5672")


def amqp_unreachable() -> str | None:
    """Why RabbitMQ tests cannot run here, or None when they can."""
    host, _, port = AMQP_ADDRESS.rpartition("@")[2].partition(":")
    try:
        socket.create_connection((host, int(port or 5672)), timeout=2).close()
    except OSError as exc:
        return f"no RabbitMQ at {host}:{port} ({exc}); set CRAWLCHAIN_TEST_AMQP=user:pw@host:port"
    if shutil.which("rabbitmqctl") is None:
        return "rabbitmqctl is not on PATH: it creates a private vhost for each test"
    return None


@pytest.fixture
def amqp_url() -> Iterator[str]:
    """The URL of a fresh, private vhost on the local RabbitMQ, deleted afterwards: a
    test sees no other test's queues or messages, and leaves none behind."""
    reason = amqp_unreachable()
    if reason:
        pytest.skip(reason)
    vhost = f"crawlchain-test-{uuid.uuid4().hex[:12]}"
    user = AMQP_ADDRESS.partition(":")[0]
    rabbitmqctl("add_vhost", vhost)
    try:
        rabbitmqctl("set_permissions", "-p", vhost, user, ".*", ".*", ".*")
        yield f"amqp://{AMQP_ADDRESS}/{vhost}"
    finally:
        rabbitmqctl("delete_vhost", vhost)


def rabbitmqctl(*args: str) -> str:
    done = subprocess.run(["rabbitmqctl", "-q", *args], capture_output=True, text=True,
                          timeout=60, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"rabbitmqctl {' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


@pytest.fixture(scope="module")
def demo_sandbox() -> Iterator[SandboxServer]:
    """The demo's sandbox site (seed 3) on a loopback port, for a module's tests."""
    running = SandboxServer(Site(World(seed=3)))
    running.start_in_thread()
    yield running
    running.shutdown()
    running.server_close()
