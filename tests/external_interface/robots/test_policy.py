"""robots.txt against a real loopback server: Google's rules, one fetch per origin."""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator

import pytest
import redis

from config import FetchSettings, RobotsSettings
from external_interface.clients.http import HttpClient
from external_interface.robots import MAX_BYTES, RobotsRecord, fetch_with
from external_interface.robots.factory import robots_from_settings
from external_interface.robots.memory import MemoryRobotsStore
from external_interface.robots.policy import RobotsPolicy, origin_of
from external_interface.robots.redis_store import RedisRobotsStore
from tests.external_interface.robots.site import Route, Site, serve

ROBOTS = b"""# a comment
User-agent: *
Disallow: /private
Allow: /private/open
Crawl-delay: 2

User-agent: crawlchain
Disallow: /not-for-us
Request-rate: 1/5

Sitemap: http://127.0.0.1/sitemap.xml
"""


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def site() -> Iterator[Site]:
    with serve({"/robots.txt": Route(body=ROBOTS)}) as served:
        yield served


@pytest.fixture
def clock() -> Clock:
    return Clock()


def policy_for(clock: Clock, store: object | None = None, **settings: float) -> RobotsPolicy:
    return RobotsPolicy(store or MemoryRobotsStore(),  # type: ignore[arg-type]
                        fetch_with(HttpClient(FetchSettings(deadline_s=5, read_timeout_s=3))),
                        RobotsSettings(**settings), clock)  # type: ignore[arg-type]


def test_a_disallow_is_obeyed_an_allow_wins_and_the_delay_is_read(
        site: Site, clock: Clock) -> None:
    robots = policy_for(clock)
    refused = robots.check(f"{site.base}/private/x", "otherbot")
    assert not refused.allowed and refused.reason == "disallowed" and refused.retry_in_s is None
    assert robots.check(f"{site.base}/private/open/1", "otherbot").allowed
    allowed = robots.check(f"{site.base}/public", "otherbot")
    assert allowed.allowed and allowed.reason == "allowed" and allowed.crawl_delay == 2.0
    assert site.hits["/robots.txt"] == 1  # asked three times, fetched once


def test_our_own_group_applies_to_our_token_with_its_request_rate(
        site: Site, clock: Clock) -> None:
    robots = policy_for(clock)
    assert not robots.check(f"{site.base}/not-for-us").allowed  # ROBOTS_USER_AGENT
    ours = robots.check(f"{site.base}/private/x")  # our group does not say /private
    assert ours.allowed and ours.crawl_delay == 5.0  # Request-rate: 1/5


def test_checking_a_batch_of_urls_says_what_checking_each_says(site: Site, clock: Clock) -> None:
    robots = policy_for(clock)
    urls = [f"{site.base}/private/x", f"{site.base}/private/open/1", "ftp://example.org/x",
            f"{site.base}/not-for-us", f"{site.base}/public"]
    for agent in ("otherbot", None):
        assert robots.check_all(urls, agent) == [
            None if url.startswith("ftp:") else robots.check(url, agent) for url in urls]
    assert site.hits["/robots.txt"] == 1


def test_sitemap_lines_are_exposed(site: Site, clock: Clock) -> None:
    assert policy_for(clock).sitemaps(f"{site.base}/any/page") == [
        "http://127.0.0.1/sitemap.xml"]


def test_a_404_robots_allows_everything(clock: Clock) -> None:
    with serve({}) as site:
        verdict = policy_for(clock).check(f"{site.base}/private")
    assert verdict.allowed and verdict.reason == "missing" and "404" in verdict.detail


def test_a_500_robots_disallows_for_a_backoff_then_allows_if_it_keeps_failing(
        clock: Clock) -> None:
    with serve({"/robots.txt": Route(500)}) as site:
        robots = policy_for(clock, error_backoff_s=60, allow_after_s=600)
        first = robots.check(f"{site.base}/page")
        assert not first.allowed and first.reason == "unavailable"
        assert first.retry_in_s == pytest.approx(60)  # defer the unit, do not skip it
        clock.now += 30
        assert not robots.check(f"{site.base}/page").allowed
        assert site.hits["/robots.txt"] == 1  # not fetched again within the back-off
        clock.now += 31
        assert not robots.check(f"{site.base}/page").allowed
        assert site.hits["/robots.txt"] == 2
        clock.now += 600
        late = robots.check(f"{site.base}/page")
        assert late.allowed and late.reason == "missing" and "all allowed" in late.detail
        site.routes["/robots.txt"] = Route(body=b"User-agent: *\nDisallow: /page\n")
        clock.now += 61
        assert robots.check(f"{site.base}/page").reason == "disallowed"  # recovered


def test_a_503_after_a_good_copy_keeps_the_copy(clock: Clock) -> None:
    with serve({"/robots.txt": Route(body=ROBOTS)}) as site:
        robots = policy_for(clock, cache_ttl_s=100)
        assert robots.check(f"{site.base}/private", "x").reason == "disallowed"
        site.routes["/robots.txt"] = Route(503)
        clock.now += 101
        kept = robots.check(f"{site.base}/private", "x")
        assert kept.reason == "disallowed" and robots.check(f"{site.base}/ok", "x").allowed
        assert site.hits["/robots.txt"] == 2


def test_a_429_robots_counts_as_unavailable(clock: Clock) -> None:
    with serve({"/robots.txt": Route(429)}) as site:
        assert policy_for(clock).check(f"{site.base}/x").reason == "unavailable"


def test_a_5_mb_robots_is_read_up_to_500_kib_and_the_rest_ignored(clock: Clock) -> None:
    head = b"User-agent: *\nDisallow: /early\n"
    filler = b"".join(b"Disallow: /filler/%d\n" % i for i in range(300_000))
    body = head + filler + b"Disallow: /late\n"
    assert len(body) > 5_000_000
    store = MemoryRobotsStore()
    with serve({"/robots.txt": Route(body=body)}) as site:
        robots = policy_for(clock, store)
        assert not robots.check(f"{site.base}/early").allowed
        assert robots.check(f"{site.base}/late").allowed
    stored = store.get(origin_of(site.base))
    assert stored is not None and len(stored.body) <= MAX_BYTES
    assert stored.body.endswith(b"\n")  # cut at a line break, not inside a path


def test_garbage_never_raises_and_allows(clock: Clock) -> None:
    garbage = bytes(range(256)) * 50 + b"<html><body>Disallow /x</body></html>\x00\xff"
    with serve({"/robots.txt": Route(body=garbage,
                                     headers={"Content-Type": "text/html"})}) as site:
        verdict = policy_for(clock).check(f"{site.base}/x")
    assert verdict.allowed


def test_a_redirect_loop_counts_as_no_robots_and_a_redirect_is_followed(
        clock: Clock) -> None:
    routes = {"/robots.txt": Route(301, headers={"Location": "/robots.txt"})}
    with serve(routes) as site:
        loop = policy_for(clock).check(f"{site.base}/x")
    assert loop.allowed and loop.reason == "missing" and "redirect" in loop.detail
    routes = {"/robots.txt": Route(301, headers={"Location": "/real-robots.txt"}),
              "/real-robots.txt": Route(body=b"User-agent: *\nDisallow: /x\n")}
    with serve(routes) as site:
        assert policy_for(clock).check(f"{site.base}/x").reason == "disallowed"


def test_an_unreachable_host_is_unavailable_and_the_log_says_whose_units_wait(
        clock: Clock, caplog: pytest.LogCaptureFixture) -> None:
    with serve({}) as site:
        base = site.base
    policy = policy_for(clock)
    with caplog.at_level(logging.WARNING, logger="external_interface.robots.policy"):
        verdict = policy.check(f"{base}/x")  # the server is gone: connection refused
        policy.check(f"{base}/y")  # the same back-off: asked once, said once
    assert not verdict.allowed and verdict.reason == "unavailable"
    [line] = caplog.messages
    assert line.startswith(f"{base}: robots.txt unreachable") and "its URLs wait" in line


def test_two_threads_asking_at_once_fetch_once(clock: Clock) -> None:
    with serve({"/robots.txt": Route(body=ROBOTS, delay_s=0.3)}) as site:
        robots = policy_for(clock)
        start = threading.Barrier(2)
        verdicts = []

        def ask() -> None:
            start.wait()
            verdicts.append(robots.check(f"{site.base}/private", "x"))

        threads = [threading.Thread(target=ask) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert site.hits["/robots.txt"] == 1
    assert [v.reason for v in verdicts] == ["disallowed", "disallowed"]


def test_processes_sharing_redis_fetch_once_and_wait_for_each_other(
        redis_client: redis.Redis, clock: Clock) -> None:
    with serve({"/robots.txt": Route(body=ROBOTS, delay_s=0.3)}) as site:
        here = policy_for(clock, RedisRobotsStore(redis_client))
        there = policy_for(clock, RedisRobotsStore(redis_client))  # its own memory
        start = threading.Barrier(2)
        results = []

        def ask(robots: RobotsPolicy) -> None:
            start.wait()
            results.append(robots.check(f"{site.base}/private", "x").allowed)

        threads = [threading.Thread(target=ask, args=(p,)) for p in (here, there)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        assert results == [False, False]
        assert site.hits["/robots.txt"] == 1
        ttl = redis_client.pttl(f"cc:robots:{origin_of(site.base)}")
        assert 86_400_000 < ttl <= 2 * 86_400_000  # fresh a day, kept a day more


def test_obey_off_fetches_nothing(site: Site, clock: Clock) -> None:
    verdict = policy_for(clock, obey=False).check(f"{site.base}/private")
    assert verdict.allowed and verdict.reason == "not-obeyed"
    assert site.hits["/robots.txt"] == 0


def test_a_url_that_is_not_http_is_refused_clearly(clock: Clock) -> None:
    with pytest.raises(ValueError, match="http"):
        policy_for(clock).check("ftp://example.org/x")


def test_origins_keep_their_port_and_drop_credentials() -> None:
    assert origin_of("HTTP://User:pw@Example.ORG:8080/a?b#c") == "http://example.org:8080"
    assert origin_of("https://example.org/") == "https://example.org"


@pytest.mark.parametrize("backend", ["memory", "redis"])
def test_every_store_keeps_records_and_one_claim(backend: str,
                                                 request: pytest.FixtureRequest) -> None:
    client = request.getfixturevalue("redis_client") if backend == "redis" else None
    robots = robots_from_settings(RobotsSettings(), client, lambda url: None)  # type: ignore
    store = robots.store
    record = RobotsRecord("parsed", 200, 1.0, 2.0, "note", b"User-agent: *\n", 0.5)
    assert store.get("http://a") is None
    store.put("http://a", record, keep_s=60)
    assert store.get("http://a") == record
    assert store.claim("http://a", 5) and not store.claim("http://a", 5)
    store.release("http://a")
    assert store.claim("http://a", 5)
