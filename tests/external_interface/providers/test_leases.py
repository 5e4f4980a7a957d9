"""Requests through the providers: the order of the transformers, bans by content, blame,
and what each outcome does to the resources. In-process pools: no network needed."""

from __future__ import annotations

import time
from urllib.parse import urlsplit

import pytest
import redis

from chains.runtime.checks import resolve
from chains.runtime.launch import worker_queues
from chains.runtime.registry import chain as get_chain
from chains.runtime.registry import site, site_names, steps
from config import ProxySettings, ResourceSettings
from exceptions import (
    Banned,
    ClientError,
    CrawlError,
    NetworkError,
    RateLimited,
    SessionExpired,
)
from external_interface.captcha import IMAGE_META
from external_interface.cookie import CookieJar
from external_interface.device_id import DevicePool
from external_interface.http import Request, Response
from external_interface.pool.factory import pool_factory
from external_interface.providers.bundle import Providers
from external_interface.providers.declare import (
    BanRule,
    Refill,
    SiteProviders,
    StepResources,
    Uses,
)
from external_interface.providers.leases import (
    NeedResource,
    apply_providers,
    check_response,
    report_leases,
)
from external_interface.providers.refill import Refills
from external_interface.proxy import ProxyPool, claimer
from external_interface.proxy.sources import StaticSource
from external_interface.user_agent import BundledUserAgents
from sandbox.captcha import CaptchaDesk
from sandbox.defences import agent_matches, signature_problem
from sites.demo.site import PROVIDERS

EXITS = ["http://127.0.0.1:9001", "http://127.0.0.1:9002"]


def providers() -> Providers:
    pools = pool_factory("memory", None)
    return Providers(
        settings=ResourceSettings(), proxy_settings=ProxySettings(ban_cooldown_s=60),
        proxies=ProxyPool(pools, StaticSource(EXITS), 300, claimer(None)),
        cookies=CookieJar(pools), devices=DevicePool(pools), agents=BundledUserAgents(),
        refills=Refills(None, 30))


def resources(step: str) -> StepResources:
    uses = PROVIDERS.uses_for(f"demo.{step}")
    assert uses is not None
    return StepResources("demo", PROVIDERS, uses)


def test_a_login_is_equipped_in_order_and_signed_over_everything_it_sends() -> None:
    p, desk = providers(), CaptchaDesk(seed=3)
    challenge = desk.issue()
    request = Request("http://127.0.0.1/h5/login", method="POST",
                      params={"captcha_id": challenge.captcha_id},
                      meta={IMAGE_META: challenge.data_url})
    signing = StepResources("demo", PROVIDERS, Uses(user_agent="mobile", proxy=True, captcha=True,
                                           sign=True))
    leases = apply_providers(p, signing, request, "unit-1", [])
    sent = leases.request
    assert agent_matches("mobile", sent.headers["User-Agent"])
    assert sent.proxy in EXITS and leases.proxy == f"127.0.0.1:{urlsplit(sent.proxy).port}"
    assert desk.check(challenge.captcha_id, sent.params["captcha_answer"])
    assert leases.solves == 1
    assert signature_problem("/h5/login", sent.params, time.time(), 60) is None  # answer signed


def test_cookie_and_device_come_from_the_sites_pools() -> None:
    p = providers()
    p.cookies.add("demo", "reader1", {"sid": "s1"})
    p.devices.add("demo", "d1")
    user = apply_providers(p, resources("h5.user_info"), Request("http://x/h5/user/u1"), "u", [])
    assert user.request.cookies == {"sid": "s1"} and user.cookie is not None
    assert user.low == ("cookie",)  # the last session left: a refill is due
    article = apply_providers(p, resources("app.detail"), Request("http://x/app/article/a1"),
                              "u", [])
    assert article.request.headers["X-Device-Id"] == "d1"
    assert article.request.headers["User-Agent"].startswith("DemoApp/")


def test_an_empty_pool_makes_the_unit_wait_for_that_kind() -> None:
    with pytest.raises(NeedResource) as waiting:
        apply_providers(providers(), resources("h5.user_info"), Request("http://x/h5/user/u1"),
                        "u", [])
    assert waiting.value.kind == "cookie" and waiting.value.seconds is None


def test_a_unit_never_gets_a_proxy_it_must_avoid() -> None:
    p = providers()
    first = apply_providers(p, resources("h5.feed"), Request("http://x/h5/feed"), "u", [])
    for _ in range(4):
        again = apply_providers(p, resources("h5.feed"), Request("http://x/h5/feed"), "u",
                                [first.proxy or ""])
        assert again.proxy != first.proxy


def page(status: int, body: bytes) -> Response:
    return Response("http://x/h5/user/u1", status, {"Content-Type": "text/html"}, body)


@pytest.mark.parametrize(("response", "error", "resource"), [
    (page(200, b"<p>Verify you are human</p>"), Banned, "proxy"),
    (page(403, b'{"error": "device quota exceeded"}'), Banned, "device"),
    (page(401, b'{"error": "session expired"}'), SessionExpired, "cookie"),
    (page(403, b'{"error": "banned"}'), Banned, None),
    (page(400, b'{"error": "stale timestamp"}'), ClientError, None),
])
def test_responses_are_judged_by_content_first_then_by_status(
        response: Response, error: type[Exception], resource: str | None) -> None:
    with pytest.raises(error) as judged:
        check_response(response, resources("h5.user_info"))
    assert getattr(judged.value, "resource", None) == resource


def test_a_normal_page_passes() -> None:
    check_response(page(200, b"<div class='profile'>"), resources("h5.user_info"))


NO_POOL = SiteProviders(uses={"web": Uses(user_agent="desktop", proxy=True)},
                        bans=(BanRule(b"Verify you are human", "proxy"),))


@pytest.mark.parametrize(("who", "judged", "error"), [
    ("a step of a site with a session pool", resources("h5.user_info"), SessionExpired),
    ("another step of that site", resources("h5.feed"), SessionExpired),
    ("a site whose steps take no session", StepResources("shop", NO_POOL, NO_POOL.uses["web"]),
     ClientError),
    ("a site that declares no providers", None, ClientError),
])
def test_a_401_rotates_only_on_a_site_with_a_session_pool(
        who: str, judged: StepResources | None, error: type[CrawlError]) -> None:
    with pytest.raises(error) as raised:
        check_response(page(401, b'{"error": "login required"}'), judged)
    assert type(raised.value) is error and raised.value.status == 401, who
    if error is ClientError:
        assert "no session pool" in str(raised.value)


def test_a_ban_rests_the_proxy_and_is_avoided_an_expired_session_is_retired() -> None:
    p = providers()
    p.cookies.add("demo", "reader1", {"sid": "s1"})
    leases = apply_providers(p, resources("h5.user_info"), Request("http://x/h5/user/u1"), "u", [])
    avoid = report_leases(p, resources("h5.user_info"), leases, Banned("403"), 2.0)
    assert avoid == leases.proxy
    assert p.proxies is not None and p.proxies.stats().cooling == 1
    report_leases(p, resources("h5.user_info"), leases, SessionExpired("401"), 2.0)
    assert p.cookies.stats("demo").retired == 1


def test_a_429_rests_only_that_exit_and_a_network_error_marks_it_down() -> None:
    p = providers()
    leases = apply_providers(p, resources("h5.feed"), Request("http://x/h5/feed"), "u", [])
    assert report_leases(p, resources("h5.feed"), leases, RateLimited("429", retry_after=1.0),
                         2.0) is None
    assert p.proxies is not None and p.proxies.stats().cooling == 1
    other = apply_providers(p, resources("h5.feed"), Request("http://x/h5/feed"), "u", [])
    assert other.proxy != leases.proxy
    report_leases(p, resources("h5.feed"), other, NetworkError("reset"), 2.0)
    assert p.proxies.stats().ready == 0


def test_a_declaration_that_signs_without_a_signer_fails_when_built() -> None:
    with pytest.raises(ValueError, match="signer"):
        SiteProviders(uses={"h5": Uses(sign=True)})
    with pytest.raises(ValueError, match="refills"):
        SiteProviders(uses={"h5": Uses(cookie=True)})


def test_a_signer_that_is_not_a_signer_fails_when_built() -> None:
    with pytest.raises(TypeError, match="Signer"):
        SiteProviders(uses={}, signer=object())  # type: ignore[arg-type]


def test_an_unknown_user_agent_family_fails_when_built() -> None:
    with pytest.raises(ValueError, match="smart-fridge"):
        SiteProviders(uses={"h5": Uses(user_agent="smart-fridge")})


def test_every_refill_chain_a_site_names_is_declared_and_fits_its_steps() -> None:
    for name in site_names():
        declared = site(name).providers
        for refill in (declared.refills.values() if declared else ()):
            resolve(get_chain(refill.chain), steps(), worker_queues())


def test_a_step_entry_wins_over_its_platforms() -> None:
    declared = SiteProviders(uses={"h5": Uses(proxy=True), "h5.login": Uses()})
    assert declared.uses_for("demo.h5.feed") == Uses(proxy=True)
    assert declared.uses_for("demo.h5.login") == Uses()
    assert declared.uses_for("demo.pc.feed") is None


def test_one_refill_in_flight_per_pool_and_accounts_take_turns(
        redis_client: redis.Redis) -> None:
    refills = Refills(redis_client, lock_s=30)
    asked = {"job": "j1", "step": "user_info"}
    first = refills.claim("cookie", "demo", Refill("demo-login", size=2), asked)
    assert first == [{"turn": 0, "requested_by": asked}, {"turn": 1, "requested_by": asked}]
    assert refills.claim("cookie", "demo", Refill("demo-login", size=2), asked) == []
    refills.release("cookie", "demo")
    again = refills.claim("cookie", "demo", Refill("demo-login", size=2), None)
    assert [params["turn"] for params in again] == [2, 3]


def test_a_pool_is_low_at_or_below_the_refill_mark() -> None:
    p = providers()
    assert p.is_low("cookie", "demo")
    p.cookies.add("demo", "reader1", {"sid": "1"})
    assert p.is_low("cookie", "demo")  # RESOURCES_REFILL_BELOW=1
    p.cookies.add("demo", "reader2", {"sid": "2"})
    assert not p.is_low("cookie", "demo")
