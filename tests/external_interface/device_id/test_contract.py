"""The device pool's contract on every pool backend."""

from __future__ import annotations

import pytest

from external_interface.device_id import DevicePool
from external_interface.pool import Empty, Lease
from external_interface.pool.factory import pool_factory


@pytest.fixture(params=["redis", "memory"])
def devices(request: pytest.FixtureRequest) -> DevicePool:
    client = request.getfixturevalue("redis_client") if request.param == "redis" else None
    return DevicePool(pool_factory(request.param, client))


def test_a_registered_device_is_leased_by_its_id(devices: DevicePool) -> None:
    assert devices.add("demo", "d1") is True
    assert devices.add("demo", "d1") is False
    assert devices.lease("demo") == Lease("d1", "d1", 1)


def test_a_retired_device_is_gone_and_the_pool_says_so(devices: DevicePool) -> None:
    devices.add("demo", "d1")
    devices.retire("demo", "d1")
    assert devices.lease("demo") == Empty(None)
    assert devices.add("demo", "d1") is False  # the site refused it: it stays out
    assert devices.stats("demo").retired == 1


def test_devices_take_turns(devices: DevicePool) -> None:
    devices.add("demo", "d1")
    devices.add("demo", "d2")
    assert [getattr(devices.lease("demo"), "member", None) for _ in range(4)] == [
        "d1", "d2", "d1", "d2"]
