"""The fetch clients every fetch bound is tested against, byte by byte: the ones that
speak HTTP themselves. The browser client's bounds are tested in its own module
(``clients/test_browser.py``), on what Chromium sends and receives."""

from __future__ import annotations

import pytest

from external_interface.clients import WIRE_CLIENTS


@pytest.fixture(scope="module", params=WIRE_CLIENTS)
def client_name(request: pytest.FixtureRequest) -> str:
    """Each such client in turn: a test that takes it runs once per client."""
    name: str = request.param
    return name
