"""Fixtures of the storage tests: a real loopback HTTP sink."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest

from tests.external_interface.storage.support import SinkHTTPServer


@pytest.fixture
def sink_server() -> Iterator[SinkHTTPServer]:
    """A real HTTP sink on 127.0.0.1, served from a thread for one test."""
    server = SinkHTTPServer()
    thread = threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)
