from __future__ import annotations

from sites.demo.h5.user_statuses import Status, UserStatusesInput, build_request, parse
from tests.sites.demo.saved import saved


def test_status_page_yields_statuses_and_the_cursor_of_the_next_page() -> None:
    params = UserStatusesInput(user_id="u0000")
    parsed = parse(params, saved("statuses_u0000_first.json"))
    assert len(parsed.items) == 5
    assert all(isinstance(s, Status) and s.user_id == "u0000" for s in parsed.items)
    assert parsed.next_params() == {"user_id": "u0000", "cursor": "bzo1"}


def test_first_page_request_sends_no_cursor_and_later_pages_do() -> None:
    assert build_request(UserStatusesInput(user_id="u0000")).params == {}
    later = build_request(UserStatusesInput(user_id="u0000", cursor="bzo1"))
    assert later.params == {"cursor": "bzo1"}
