from __future__ import annotations

import pytest

from exceptions import ParseError
from external_interface.fetch import Response
from sites.demo.app.register_device import Device, RegisterInput, build_request, parse


def answered(body: bytes) -> Response:
    return Response("http://127.0.0.1:8765/app/device/register", 200, {}, body)


def test_a_registration_yields_the_device_id_for_the_pool() -> None:
    assert build_request(RegisterInput()).method == "POST"
    [device] = parse(RegisterInput(), answered(b'{"device_id": "d5f0"}')).items
    assert isinstance(device, Device) and device.device_id == "d5f0"


def test_an_answer_without_a_device_id_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="device_id"):
        parse(RegisterInput(), answered(b'{"error": "busy"}'))
