"""The cookie jar's contract on every pool backend: sessions per site, keyed by account."""

from __future__ import annotations

import pytest

from external_interface.cookie import CookieJar, SessionLease
from external_interface.pool import Empty
from external_interface.pool.factory import pool_factory


@pytest.fixture(params=["redis", "memory"])
def jar(request: pytest.FixtureRequest) -> CookieJar:
    client = request.getfixturevalue("redis_client") if request.param == "redis" else None
    return CookieJar(pool_factory(request.param, client))


def test_a_session_added_is_leased_with_its_account_and_cookies(jar: CookieJar) -> None:
    member = jar.add("demo", "reader1", {"sid": "abc"})
    lease = jar.lease("demo")
    assert lease == SessionLease(member, "reader1", {"sid": "abc"}, 1)
    assert member.startswith("reader1|")


def test_sites_have_separate_pools(jar: CookieJar) -> None:
    jar.add("demo", "reader1", {"sid": "abc"})
    assert jar.lease("other") == Empty(None)
    assert jar.stats("demo").ready == 1 and jar.stats("other").live == 0


def test_use_spreads_over_the_sessions(jar: CookieJar) -> None:
    for account in ("reader1", "reader2"):
        jar.add("demo", account, {"sid": account})
    leases = [jar.lease("demo") for _ in range(4)]
    assert [getattr(s, "account", None) for s in leases] == ["reader1", "reader2"] * 2


def test_an_invalidated_session_is_never_handed_out_again(jar: CookieJar) -> None:
    first = jar.add("demo", "reader1", {"sid": "old"})
    jar.add("demo", "reader1", {"sid": "new"})
    jar.invalidate("demo", first)
    assert {getattr(jar.lease("demo"), "cookies", {})["sid"] for _ in range(3)} == {"new"}
    jar.invalidate("demo", first)  # twice is harmless
    assert (jar.stats("demo").live, jar.stats("demo").retired) == (1, 1)
