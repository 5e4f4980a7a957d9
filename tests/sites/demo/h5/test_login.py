from __future__ import annotations

import pytest

from exceptions import ParseError
from external_interface.captcha import IMAGE_META
from external_interface.fetch import Response
from sites.demo.h5.login import LoginInput, Session, build_request, parse

PARAMS = LoginInput(account="reader1", captcha_id="c1", image="data:image/svg+xml;base64,PHN2Zy8+")


def answered(set_cookie: str | None) -> Response:
    headers = {"Set-Cookie": set_cookie} if set_cookie else {}
    return Response("http://127.0.0.1:8765/h5/login", 200, headers,
                    b'{"ok": true, "account": "reader1"}')


def test_the_login_posts_the_account_and_carries_the_captcha_for_the_solver() -> None:
    request = build_request(PARAMS)
    assert (request.method, request.params) == ("POST", {"captcha_id": "c1"})
    assert request.data is not None and b"account=reader1" in request.data
    assert request.meta == {IMAGE_META: PARAMS.image}
    assert "captcha_answer" not in request.params  # the captcha provider adds it


def test_a_login_yields_a_session_stored_without_its_cookie() -> None:
    [session] = parse(PARAMS, answered("sid=0a1b2c; Path=/; HttpOnly")).items
    assert isinstance(session, Session)
    assert session.cookies == {"sid": "0a1b2c"}
    assert session.model_dump() == {"account": "reader1"}  # what the item store keeps


def test_a_login_without_a_session_cookie_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="session cookie"):
        parse(PARAMS, answered(None))
