"""A real API server on loopback (uvicorn in a thread, on a port the OS picked) over a real
redis-server of its own, as ``python -m api`` serves it; requests go over HTTP."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
import requests
import uvicorn
from fastapi import FastAPI

from api.app import create_app
from api.runtime import Cluster
from api.security import Keys
from chains.broker.dispatch import CeleryDispatch
from chains.runtime.context import Runtime
from ops import embedded_redis
from sandbox.cluster import local_env, runtime_for

TOKEN = "test-token-0123456789abcdef"


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``app`` served on 127.0.0.1 at a free port until the block ends; its base URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_config=None, lifespan="off"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the API did not start"
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listener.close()


def api_for(runtime: Runtime, inspect_timeout_s: float = 0.3) -> FastAPI:
    """The app over ``runtime``, sending with its Celery app, with the test's token."""
    assert isinstance(runtime.dispatch, CeleryDispatch)
    return create_app(Cluster(runtime, runtime.dispatch.app, inspect_timeout_s), Keys(TOKEN))


@dataclass
class Served:
    url: str
    app: FastAPI
    runtime: Runtime

    def session(self, bearer: bool = True) -> requests.Session:
        """An HTTP client; with the token in its ``Authorization`` header by default."""
        client = requests.Session()
        if bearer:
            client.headers["Authorization"] = f"Bearer {TOKEN}"
        return client


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One server and one redis-server (broker and state plane) for a test module; no
    worker, so what is launched stays queued. Not one for the session: its threads would
    outlive the module into tests that fork."""
    workdir = tmp_path_factory.mktemp("api")
    sock = workdir / "redis.sock"
    proc = embedded_redis.start(workdir / "redis", sock, workdir / "redis.log")
    runtime = runtime_for(local_env(workdir, sock, {"LAUNCH_WORKERS": "off"}))  # no worker
    app = api_for(runtime)
    try:
        with serving(app) as url:
            yield Served(url, app, runtime)
    finally:
        runtime.close()
        proc.terminate()
        proc.wait(timeout=10)


def workdir_of(served: Served) -> Path:
    return Path(served.runtime.settings.storage.url.removeprefix("sqlite:///")).parent
