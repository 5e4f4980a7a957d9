"""The sandbox defends itself like a real site; each defence on its own switch."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from config import FetchSettings
from exceptions import ClientError
from external_interface.captcha import Challenge
from external_interface.clients.http import HttpClient
from external_interface.http import Request
from external_interface.user_agent.bundled import AGENTS
from sandbox.calls import Call
from sandbox.captcha import CaptchaDesk
from sandbox.defences import Defences
from sandbox.login import ACCOUNTS
from sandbox.server import SandboxServer, Site
from sandbox.world import World
from sites.demo.captcha import DemoCaptchaSolver
from sites.demo.signer import SIGNER

MOBILE, DESKTOP, APP = AGENTS["mobile"][0], AGENTS["desktop"][0], "DemoApp/3.2.1 (iPhone)"
WORLD = World(seed=7)


def site(**knobs: Any) -> Site:
    return Site(WORLD, defences=Defences(**knobs))


def get(s: Site, path: str, agent: str = MOBILE, query: dict[str, str] | None = None,
        cookies: dict[str, str] | None = None) -> tuple[int, bytes]:
    """A GET from one exit with a user agent, as the crawler's requests arrive."""
    answer = s.answer(Call(path, query or {}, headers={"user-agent": agent},
                           client="127.0.0.11", cookies=cookies or {}))
    return answer.status, answer.body


def signed(path: str, query: dict[str, str], at: float) -> dict[str, str]:
    return SIGNER.sign(Request(f"http://sandbox{path}", params=query), at).params


def login(s: Site, account: str = "reader1") -> str:
    """Log in as the crawler's login chain does: captcha, solve, post."""
    challenge = json.loads(s.answer(Call("/h5/login/captcha")).body)
    answer = DemoCaptchaSolver().solve(Challenge.from_data_url(challenge["image"]))
    reply = s.answer(Call("/h5/login", {"captcha_id": challenge["captcha_id"],
                                        "captcha_answer": answer}, method="POST",
                          form={"account": account, "password": ACCOUNTS[account]}))
    assert reply.status == 200, reply.body
    [(_, cookie)] = [h for h in reply.headers if h[0] == "Set-Cookie"]
    return cookie.split(";", 1)[0].split("=", 1)[1]


def test_with_every_defence_off_pages_need_nothing() -> None:
    s = Site(WORLD)
    for path in ("/h5/feed", "/h5/user/u0001", "/app/article/a00001", "/api/comments"):
        query = {"article_id": "a00001"} if path == "/api/comments" else {}
        assert s.answer(Call(path, query)).status == 200, path


@pytest.fixture(scope="module")
def http_site() -> Iterator[str]:
    server = SandboxServer(Site(WORLD, defences=Defences(sign=True)))
    server.start_in_thread()
    yield server.base_url
    server.shutdown()
    server.server_close()


def test_over_http_a_stale_signature_is_refused_and_a_fresh_one_accepted(
        http_site: str) -> None:
    fetcher = HttpClient(FetchSettings())
    request = Request(f"{http_site}/h5/feed", params={"page": "1"})
    assert fetcher.fetch(SIGNER.sign(request, time.time())).json()["page"] == 1
    with pytest.raises(ClientError) as refused:
        fetcher.fetch(SIGNER.sign(request, time.time() - 600))
    assert refused.value.status == 400
    assert fetcher.fetch_raw(SIGNER.sign(request, time.time() - 600)).json() == {
        "error": "stale timestamp"}


@pytest.mark.parametrize(("query", "problem"), [
    ({"page": "1"}, "missing sign"),
    ({"page": "1", "ts": "soon", "sign": "x"}, "bad timestamp"),
])
def test_an_unsigned_or_malformed_signature_is_refused(query: dict[str, str],
                                                       problem: str) -> None:
    status, body = get(site(sign=True), "/h5/feed", query=query)
    assert (status, json.loads(body)) == (400, {"error": problem})


def test_a_signature_for_other_params_is_refused() -> None:
    query = signed("/h5/feed", {"page": "1"}, time.time()) | {"page": "2"}
    assert json.loads(get(site(sign=True), "/h5/feed", query=query)[1]) == {"error": "bad sign"}


def test_the_html_pages_and_the_shared_api_need_no_signature() -> None:
    s = site(sign=True)
    assert get(s, "/h5/user/u0001")[0] == 200
    assert get(s, "/api/comments", query={"article_id": "a00001"})[0] == 200


@pytest.mark.parametrize(("path", "good", "bad"), [
    ("/h5/user/u0001", MOBILE, DESKTOP),
    ("/app/article/a00001", APP, MOBILE),
    ("/h5/user/u0001", MOBILE, "python-requests/2.32"),
])
def test_each_platform_wants_its_user_agent_family(path: str, good: str, bad: str) -> None:
    s = site(user_agents=True)
    assert get(s, path, agent=good)[0] == 200
    status, body = get(s, path, agent=bad)
    assert status == 400 and b"unsupported client" in body


def test_the_shared_api_takes_any_browser_or_the_app_but_not_a_library() -> None:
    s = site(user_agents=True)
    for agent in (MOBILE, DESKTOP, APP):
        assert get(s, "/api/comments", agent=agent, query={"article_id": "a00001"})[0] == 200
    assert get(s, "/api/comments", agent="curl/8.5", query={"article_id": "a00001"})[0] == 400


def test_user_pages_want_a_session_that_expires_after_its_uses() -> None:
    s = site(sessions=True, session_uses=3)
    assert get(s, "/h5/user/u0001") == (401, b'{"error": "login required"}')
    sid = login(s)
    statuses = [get(s, "/h5/user/u0001", cookies={"sid": sid})[0] for _ in range(4)]
    assert statuses == [200, 200, 200, 401]
    assert get(s, "/h5/user/u0001", cookies={"sid": sid})[1] == b'{"error": "login required"}'


def test_a_login_with_a_wrong_captcha_or_password_is_a_400() -> None:
    s = Site(WORLD)
    challenge = json.loads(s.answer(Call("/h5/login/captcha")).body)
    form = {"account": "reader1", "password": ACCOUNTS["reader1"]}
    wrong = s.answer(Call("/h5/login", {"captcha_id": challenge["captcha_id"],
                                        "captcha_answer": "-1000"}, method="POST", form=form))
    assert (wrong.status, json.loads(wrong.body)) == (400, {"error": "wrong captcha"})
    challenge = json.loads(s.answer(Call("/h5/login/captcha")).body)
    answer = DemoCaptchaSolver().solve(Challenge.from_data_url(challenge["image"]))
    form["password"] = "guess"
    refused = s.answer(Call("/h5/login", {"captcha_id": challenge["captcha_id"],
                                          "captcha_answer": answer}, method="POST", form=form))
    assert (refused.status, json.loads(refused.body)) == (400, {"error": "wrong password"})


def test_a_captcha_is_good_for_one_try_only() -> None:
    desk = CaptchaDesk(seed=1)
    challenge = desk.issue()
    assert not desk.check(challenge.captcha_id, "wrong")
    assert not desk.check(challenge.captcha_id, challenge.answer)


def test_the_app_wants_a_registered_device_within_its_budget() -> None:
    s = site(devices=True, device_budget=2)
    assert get(s, "/app/article/a00001", agent=APP)[0] == 400  # no device id at all
    device = json.loads(s.answer(Call("/app/device/register", method="POST")).body)["device_id"]
    served = [s.answer(Call("/app/article/a00001", headers={"x-device-id": device})).status
              for _ in range(3)]
    assert served == [200, 200, 403]
    over = s.answer(Call("/app/article/a00001", headers={"x-device-id": device}))
    assert json.loads(over.body) == {"error": "device quota exceeded"}
    stranger = s.answer(Call("/app/article/a00001", headers={"x-device-id": "d00"}))
    assert json.loads(stranger.body) == {"error": "unregistered device"}


def test_above_the_rate_an_exit_gets_429_and_after_repeated_abuse_a_ban() -> None:
    s = site(rate_limit=True, rate_per_exit=3, strikes_to_ban=2, ban_s=600, retry_after_s=7)
    answers = [s.answer(Call("/h5/feed", client="127.0.0.11")) for _ in range(5)]
    assert [a.status for a in answers] == [200, 200, 200, 429, 429]
    assert ("Retry-After", "7") in answers[3].headers
    banned = s.answer(Call("/h5/feed", client="127.0.0.11"))
    assert (banned.status, json.loads(banned.body)) == (403, {"error": "banned"})
    interstitial = s.answer(Call("/h5/user/u0001", client="127.0.0.11"))
    assert interstitial.status == 200 and b"Verify you are human" in interstitial.body
    assert s.answer(Call("/h5/feed", client="127.0.0.12")).status == 200  # other exits work


def test_a_burnt_exit_and_a_blocked_path_are_banned_from_the_start() -> None:
    s = site(banned_exits=frozenset({"127.0.0.14"}), blocked_paths=frozenset({"/h5/user/u0002"}))
    assert s.answer(Call("/h5/feed", client="127.0.0.14")).status == 403
    assert s.answer(Call("/h5/feed", client="127.0.0.11")).status == 200
    blocked = s.answer(Call("/h5/user/u0002", client="127.0.0.11"))
    assert blocked.status == 200 and b"Verify you are human" in blocked.body


def test_on_turns_every_defence_on_and_keeps_the_knobs_given() -> None:
    defences = Defences.on(session_uses=2)
    assert (defences.sign, defences.sessions, defences.devices, defences.user_agents,
            defences.rate_limit, defences.session_uses) == (True, True, True, True, True, 2)


def test_the_health_route_answers_whatever_the_defences() -> None:
    s = Site(WORLD, defences=Defences.on(banned_exits=frozenset({"127.0.0.1"})))
    assert s.answer(Call("/health")).status == 200
