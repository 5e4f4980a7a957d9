"""The fetch clients every fetch bound is tested against."""

from __future__ import annotations

import pytest

from external_interface.clients import CLIENTS


@pytest.fixture(scope="module", params=CLIENTS)
def client_name(request: pytest.FixtureRequest) -> str:
    """Each fetch client in turn: a test that takes it runs once per client."""
    name: str = request.param
    return name
