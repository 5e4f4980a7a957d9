from __future__ import annotations

import pytest

from exceptions import ParseError
from external_interface.captcha import Challenge
from sites.demo import account_for, accounts
from sites.demo.captcha import DemoCaptchaSolver
from sites.demo.h5.captcha import CaptchaInput, parse
from tests.sites.demo.saved import broken, saved


def test_a_challenge_goes_to_login_with_the_account_whose_turn_it_is() -> None:
    [challenge] = parse(CaptchaInput(turn=4), saved("login_captcha.json")).follow["challenges"]
    assert challenge["account"] == account_for(4) == sorted(accounts())[4 % len(accounts())]
    assert challenge["captcha_id"] and challenge["image"].startswith("data:image/svg+xml")
    assert DemoCaptchaSolver().solve(Challenge.from_data_url(challenge["image"])).lstrip(
        "-").isdigit()


def test_an_answer_without_a_challenge_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="captcha_id"):
        parse(CaptchaInput(), broken(b'{"error": "busy"}'))
