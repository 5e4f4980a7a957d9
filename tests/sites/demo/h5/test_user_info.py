from __future__ import annotations

import pytest

from exceptions import ParseError
from sites.demo.h5.user_info import User, UserInfoInput, parse
from tests.sites.demo.saved import broken, saved


def test_profile_page_yields_one_user() -> None:
    [user] = parse(UserInfoInput(user_id="u0001"), saved("user_u0001.html")).items
    assert isinstance(user, User)
    assert (user.id, user.name) == ("u0001", "user 1")
    assert user.followers >= 0 and user.bio


def test_page_without_a_profile_is_a_parse_error() -> None:
    with pytest.raises(ParseError, match="profile"):
        parse(UserInfoInput(user_id="u0001"), broken())


def test_user_ids_outside_the_site_pattern_are_refused() -> None:
    with pytest.raises(ValueError, match="user_id"):
        UserInfoInput(user_id="../admin")
