"""Authenticated, encrypted links: the demo on a Redis that speaks only TLS and wants a
password and a client certificate (a CA made for the test), as broker and state plane.

A plain-text connection to it is refused, and so is a TLS one without the client
certificate. Then every log, the job's summary, the monitor's snapshot and every
answer of the API and the console are searched for the password.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from fastapi.routing import iter_route_contexts

from api.security import SESSION_COOKIE, Keys
from config import Settings
from ops import embedded_redis
from sandbox import tls
from sandbox.cluster import ROOT, Cluster
from sandbox.world import World
from tests.api.conftest import TOKEN, api_for, serving
from tests.chains.test_demo_end_to_end import assert_matches_world, demo

pytestmark = [pytest.mark.slow, pytest.mark.integration]

PASSWORD = f"redis-pw-{uuid.uuid4().hex[:12]}"
WORLD = World(seed=3)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def tls_cluster(tmp_path: Path) -> Iterator[tuple[Cluster, int]]:
    if reason := tls.unavailable():
        pytest.skip(reason)
    authority = tls.make_authority(tmp_path / "tls")
    port = free_port()
    server = embedded_redis.start(
        tmp_path / "redis", tmp_path / "redis.sock", tmp_path / "redis.log", password=PASSWORD,
        tls=embedded_redis.TLS("127.0.0.1", port, authority.server_cert, authority.server_key,
                               authority.ca, clients="yes"))
    url = f"rediss://:{PASSWORD}@127.0.0.1:{port}/0"
    env = {"CELERY_BROKER_URL": url, "STATE_REDIS_URL": url,
           "REDIS_TLS_CA_FILE": str(authority.ca), "REDIS_TLS_CERT_FILE": str(
               authority.client_cert), "REDIS_TLS_KEY_FILE": str(authority.client_key)}
    cluster = Cluster(tmp_path, WORLD, extra_env=env)
    try:
        yield cluster.start(redis=False), port
    finally:
        cluster.stop()
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=10)


def test_a_plain_text_connection_to_the_tls_redis_is_refused(
        tls_cluster: tuple[Cluster, int]) -> None:
    cluster, port = tls_cluster
    with pytest.raises(redis.ConnectionError):
        redis.Redis(host="127.0.0.1", port=port, password=PASSWORD, socket_timeout=2).ping()
    ca = cluster.env["REDIS_TLS_CA_FILE"]
    without_certificate = redis.Redis(host="127.0.0.1", port=port, password=PASSWORD, ssl=True,
                                      ssl_ca_certs=ca, socket_timeout=2)
    with pytest.raises(redis.ConnectionError):
        without_certificate.ping()
    assert cluster.runtime.redis.ping()  # the settings' client: TLS, password, certificate


def test_the_demo_finishes_over_tls_and_auth_and_no_password_is_shown_anywhere(
        tls_cluster: tuple[Cluster, int], tmp_path: Path) -> None:
    cluster, _ = tls_cluster
    assert cluster.app.conf.broker_url.startswith("rediss://")
    status = cluster.launch(demo, page=1).wait(timeout=180)
    assert_matches_world(status, WORLD)
    shown = {"summary": json.dumps(status), "monitor": monitor_snapshot(cluster),
             **api_answers(cluster)}
    shown |= {path.name: path.read_text(errors="replace") for path in tmp_path.glob("*.log")}
    assert len([name for name in shown if name.endswith(".log")]) >= 2  # worker, redis
    leaked = [name for name, text in shown.items() if PASSWORD in text]
    assert leaked == []
    assert "rediss://:***@" in shown["w0.log"] or "rediss://:**@" in shown["w0.log"]


def monitor_snapshot(cluster: Cluster) -> str:
    """``python -m monitor --once --json`` on the cluster's settings: jobs, workers, queues."""
    done = subprocess.run([sys.executable, "-m", "monitor", "--once", "--json"], cwd=ROOT,
                          env=cluster.env, capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    snapshot = json.loads(done.stdout.splitlines()[-1])
    assert snapshot["jobs"] and snapshot["workers"]
    return done.stdout + done.stderr


def api_answers(cluster: Cluster) -> dict[str, str]:
    """Every answer of every GET route of the API and the console, signed in, for one job."""
    runtime = cluster.build_runtime()
    assert isinstance(runtime.settings, Settings)
    job_id = runtime.ledger.job_ids(1)[0]
    app = api_for(runtime)
    out: dict[str, str] = {}
    try:
        with serving(app) as url:
            import requests

            client = requests.Session()
            client.headers["Authorization"] = f"Bearer {TOKEN}"
            client.cookies.set(SESSION_COOKIE, Keys(TOKEN).session)
            for route in iter_route_contexts(app.routes):
                if "GET" in (route.methods or ()):
                    path = str(route.path).replace("{job_id}", job_id).replace("{name}", "demo")
                    answer = client.get(url + path)
                    assert answer.status_code < 400, (path, answer.text)
                    out[path] = answer.text
    finally:
        runtime.close()
    assert len(out) >= 12
    return out
