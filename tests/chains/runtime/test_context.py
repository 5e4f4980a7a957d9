"""Runtime built from settings: what the environment says is what a task gets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from chains.runtime.context import Runtime
from config import Settings
from exceptions import UnsafeURL
from external_interface.http import Request
from sandbox.server import SandboxServer, Site
from sandbox.world import World
from worker import make_app


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = SandboxServer(Site(World()))
    server.start_in_thread()
    yield server.base_url
    server.shutdown()
    server.server_close()


def resources(monkeypatch: pytest.MonkeyPatch, socket: Path, tmp: Path,
              **env: str) -> Runtime:
    monkeypatch.setenv("STATE_REDIS_URL", f"unix://{socket}")
    monkeypatch.setenv("STORAGE_URL", f"sqlite:///{tmp / 'items.db'}")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    settings = Settings()
    return Runtime.from_settings(settings, make_app(settings))


def test_the_ssrf_guard_refuses_loopback_unless_allowed(
        monkeypatch: pytest.MonkeyPatch, redis_socket: Path, tmp_path: Path, site: str) -> None:
    guarded = resources(monkeypatch, redis_socket, tmp_path, FETCH_SSRF_GUARD="true")
    with pytest.raises(UnsafeURL):
        guarded.fetcher.fetch_raw(Request(f"{site}/h5/feed"))
    port = site.rsplit(":", 1)[1]
    allowed = resources(monkeypatch, redis_socket, tmp_path, FETCH_SSRF_GUARD="true",
                        FETCH_SSRF_ALLOW=f'["127.0.0.1:{port}"]')
    assert allowed.fetcher.fetch_raw(Request(f"{site}/h5/feed")).status == 200


def test_without_the_guard_loopback_is_fetched(
        monkeypatch: pytest.MonkeyPatch, redis_socket: Path, tmp_path: Path, site: str) -> None:
    plain = resources(monkeypatch, redis_socket, tmp_path)
    assert plain.fetcher.fetch_raw(Request(f"{site}/h5/feed")).status == 200
