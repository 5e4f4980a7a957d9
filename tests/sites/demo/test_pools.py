"""The steps that refill the demo's pools: captcha -> login, device registration."""

from __future__ import annotations

import pytest

from exceptions import ParseError
from external_interface.captcha import IMAGE_META, Challenge
from external_interface.http import Response
from sites.demo.accounts import account_for, accounts
from sites.demo.captcha import DemoCaptchaSolver
from sites.demo.pools import Challenge as LoginChallenge
from sites.demo.pools import LoginTurn, RegisterTurn, captcha, login, register_device
from sites.demo.site import DemoSettings
from tests.sites.demo.saved import broken, saved

SETTINGS = DemoSettings(base_url="http://127.0.0.1:8765")
PARAMS = LoginChallenge(account="reader1", captcha_id="c1",
                        image="data:image/svg+xml;base64,PHN2Zy8+")


def test_a_challenge_goes_to_login_with_the_account_whose_turn_it_is() -> None:
    [challenge] = captcha(LoginTurn(turn=4), saved("login_captcha.json")).follow["challenges"]
    assert challenge["account"] == account_for(4) == sorted(accounts())[4 % len(accounts())]
    assert challenge["captcha_id"] and challenge["image"].startswith("data:image/svg+xml")
    assert DemoCaptchaSolver().solve(Challenge.from_data_url(challenge["image"])).lstrip(
        "-").isdigit()


def test_an_answer_without_a_challenge_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="captcha_id"):
        captcha(LoginTurn(), broken(b'{"error": "busy"}'))


def answered(set_cookie: str | None) -> Response:
    headers = {"Set-Cookie": set_cookie} if set_cookie else {}
    return Response("http://127.0.0.1:8765/h5/login", 200, headers,
                    b'{"ok": true, "account": "reader1"}')


def test_the_login_posts_the_account_and_carries_the_captcha_for_the_solver() -> None:
    request = login.request(PARAMS, SETTINGS)
    assert (request.method, request.params) == ("POST", {"captcha_id": "c1"})
    assert request.data is not None and b"account=reader1" in request.data
    assert request.meta == {IMAGE_META: PARAMS.image}
    assert "captcha_answer" not in request.params  # the captcha provider adds it


def test_a_login_yields_a_session_stored_without_its_cookie() -> None:
    [session] = login(PARAMS, answered("sid=0a1b2c; Path=/; HttpOnly")).items
    assert session.cookies == {"sid": "0a1b2c"}
    assert session.model_dump() == {"account": "reader1"}  # what the item store keeps


def test_a_login_without_a_session_cookie_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="session cookie"):
        login(PARAMS, answered(None))


def registered(body: bytes) -> Response:
    return Response("http://127.0.0.1:8765/app/device/register", 200, {}, body)


def test_a_registration_yields_the_device_id_for_the_pool() -> None:
    assert register_device.request(RegisterTurn(), SETTINGS).method == "POST"
    [device] = register_device(RegisterTurn(), registered(b'{"device_id": "d5f0"}')).items
    assert device.device_id == "d5f0"


def test_an_answer_without_a_device_id_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="device_id"):
        register_device(RegisterTurn(), registered(b'{"error": "busy"}'))
