"""The adaptive throttle on a real Redis: a simulated crawl converges, processes share it."""

from __future__ import annotations

import multiprocessing
import time

import pytest
import redis

from config import Politeness, ThrottleSettings
from external_interface.politeness import Wait
from external_interface.politeness.factory import limiter_from_redis, throttle_from_settings
from external_interface.politeness.redis_throttle import RedisThrottle, rates
from external_interface.politeness.throttle import (
    Observation,
    Throttle,
    crawl_delay_policy,
    strictest,
)
from tests.external_interface.politeness.simulation import T0, Server, crawl
from tests.external_interface.test_politeness import client_like

FORK = multiprocessing.get_context("fork")


@pytest.fixture
def throttle(redis_client: redis.Redis) -> RedisThrottle:
    built = throttle_from_settings(ThrottleSettings(), redis_client)
    assert isinstance(built, Throttle)
    assert isinstance(built, RedisThrottle)
    return built


def start(throttle: Throttle, key: str) -> None:
    """Create the key's controller at the simulated epoch."""
    throttle.observe(key, [], now=T0)


# -- the simulated crawl: the figures the polite benchmark asks for --------------------
@pytest.mark.parametrize("batch", [1, 8])
def test_a_50_per_s_token_bucket_with_10_percent_503s_is_crawled_near_its_rate(
        throttle: RedisThrottle, batch: int) -> None:
    start(throttle, "bucket")
    result = crawl(Server(rate=50, capacity=50, retry_after_s=1), throttle, "bucket",
                   batch=batch)
    assert result.elapsed_s <= 1.25 * result.floor_s, result
    assert result.status_429 <= 0.10 * result.requests, result
    assert result.final is not None and result.final.phase == "steady"
    assert 40 <= (result.final.policy.rate_per_s or 0) <= 60
    assert 45 <= (result.final.ceiling_per_s or 0) <= 60  # it learned the server's rate


def test_a_bucket_without_retry_after_still_gets_few_429s(throttle: RedisThrottle) -> None:
    start(throttle, "no-ra")
    result = crawl(Server(rate=50, capacity=100, retry_after_s=None), throttle, "no-ra")
    assert result.status_429 <= 0.10 * result.requests, result
    assert result.elapsed_s <= 1.25 * result.floor_s, result


def test_without_defences_the_throttle_costs_under_10_percent(throttle: RedisThrottle) -> None:
    start(throttle, "open")
    throttled = crawl(Server(rate=None, share_503=0.0), throttle, "open")
    free = crawl(Server(rate=None, share_503=0.0), None, "open")
    assert throttled.elapsed_s <= 1.10 * free.elapsed_s, (throttled, free)
    assert throttled.final is not None and throttled.final.phase == "start"


def test_random_503s_alone_never_make_it_collapse(throttle: RedisThrottle) -> None:
    start(throttle, "flaky")
    throttled = crawl(Server(rate=None, share_503=0.10), throttle, "flaky")
    free = crawl(Server(rate=None, share_503=0.10), None, "flaky")
    assert throttled.elapsed_s <= 1.10 * free.elapsed_s, (throttled, free)


def test_a_declared_ceiling_is_never_exceeded(throttle: RedisThrottle) -> None:
    ceiling = Politeness(rate_per_s=20, max_concurrency=3)
    throttle.observe("capped", [], ceiling, now=T0)
    result = crawl(Server(rate=50), throttle, "capped", units=300, ceiling=ceiling)
    assert all(rate is not None and rate <= 20 for _, rate in result.rates)
    assert result.status_429 == 0
    assert result.final is not None and (result.final.policy.max_concurrency or 0) <= 3


# -- the signals, one at a time -------------------------------------------------------
def test_a_429_with_retry_after_cools_the_whole_bucket_in_the_limiter(
        throttle: RedisThrottle, redis_client: redis.Redis) -> None:
    limiter = limiter_from_redis(redis_client)
    control = throttle.observe("site", [Observation(0.01, 429, 3.0)])
    assert control.cooldown_s == pytest.approx(3.0, abs=0.05)
    answer = limiter.try_acquire("site", Politeness(rate_per_s=100))
    assert isinstance(answer, Wait) and answer.reason == "cooldown"
    assert answer.seconds == pytest.approx(3.0, abs=0.1)


def test_a_retry_after_is_capped(redis_client: redis.Redis) -> None:
    throttle = RedisThrottle(redis_client, ThrottleSettings(max_retry_after_s=2))
    assert throttle.observe("site", [Observation(0.01, 429, 3600.0)]).cooldown_s <= 2.0


def test_a_503_with_retry_after_is_a_rate_signal_and_one_without_is_not(
        throttle: RedisThrottle) -> None:
    good = [Observation(0.01, 200, None, T0 + i * 0.01) for i in range(1, 40)]
    throttle.observe("a", good, now=T0 + 0.4)
    throttle.observe("b", good, now=T0 + 0.4)
    plain = throttle.observe("a", [Observation(0.01, 503, None, T0 + 0.5)], now=T0 + 0.5)
    assert plain.phase == "start" and plain.cooldown_s == 0
    rate_503 = throttle.observe("b", [Observation(0.01, 503, 1.0, T0 + 0.5)], now=T0 + 0.5)
    assert rate_503.phase == "steady" and rate_503.cooldown_s == pytest.approx(1.0, abs=0.01)


def test_rising_latency_slows_the_key_and_flat_latency_lets_it_rise(
        throttle: RedisThrottle) -> None:
    now = T0
    for _ in range(30):  # a clean, busy key: ramps, then holds at the rate it sends
        now += 0.1
        control = throttle.observe("slow", [Observation(0.01, 200)] * 5, now=now)
    assert control.phase == "start"
    before = throttle.observe("slow", [Observation(0.01, 429)], now=now + 0.1).policy
    for step in range(1, 20):
        control = throttle.observe("slow", [Observation(1.5, 200)] * 5, now=now + 1 + step * 0.1)
    assert (control.policy.rate_per_s or 0) < 0.8 * (before.rate_per_s or 0)
    assert throttle.state("slow")["decreases"] >= 2


def test_old_429s_from_one_overload_decrease_once(throttle: RedisThrottle) -> None:
    throttle.observe("burst", [Observation(0.01, 200, None, T0)] * 20, now=T0)
    first = throttle.observe("burst", [Observation(0.01, 429, None, T0 + 1)], now=T0 + 1)
    # answers to requests sent before that decrease, reported two seconds later
    late = [Observation(0.01, 429, None, T0 + 1)] * 30
    again = throttle.observe("burst", late, now=T0 + 3)
    assert again.policy.rate_per_s >= first.policy.rate_per_s  # type: ignore[operator]
    assert throttle.state("burst")["decreases"] == 1


# -- shared by processes, read by the monitor ------------------------------------------
def _report(client: redis.Redis, key: str, statuses: list[int]) -> None:
    throttle = RedisThrottle(client_like(client), ThrottleSettings())
    for status in statuses:
        throttle.observe(key, [Observation(0.01, status)])


def test_two_processes_share_one_controller(redis_client: redis.Redis) -> None:
    children = [FORK.Process(target=_report, args=(redis_client, "shared", [200] * 150))
                for _ in range(2)]
    for child in children:
        child.start()
    for child in children:
        child.join(30)
        assert child.exitcode == 0
    here = RedisThrottle(redis_client, ThrottleSettings(refresh_s=0.0))
    assert here.state("shared")["responses"] == 300  # no update lost between processes
    assert here.current("shared").max_concurrency == 64  # both ramped one window
    other = FORK.Process(target=_report, args=(redis_client, "shared", [429]))
    other.start()
    other.join(30)
    assert other.exitcode == 0
    after = here.current("shared")  # a 429 seen by another process slows this one
    assert after.rate_per_s is not None and here.state("shared")["phase"] == "steady"


def test_the_monitor_reads_every_keys_rate(redis_client: redis.Redis,
                                           throttle: RedisThrottle) -> None:
    throttle.observe("one", [Observation(0.02, 200)])
    throttle.observe("two", [Observation(0.02, 429)])
    shown = {row["key"]: row for row in rates(redis_client, ThrottleSettings())}
    assert set(shown) == {"one", "two"}
    assert shown["one"]["phase"] == "start" and shown["one"]["rate_per_s"] is None
    assert shown["two"]["phase"] == "steady" and shown["two"]["rate_per_s"] > 0
    assert shown["two"]["rate_limited"] == 1


def test_a_process_serves_its_copy_until_it_is_stale(redis_client: redis.Redis) -> None:
    throttle = RedisThrottle(redis_client, ThrottleSettings(refresh_s=60))
    first = throttle.current("cached")
    redis_client.delete("cc:polite:{cached}:throttle")
    assert throttle.current("cached") is first


# -- ceilings --------------------------------------------------------------------------
def test_the_strictest_policy_and_a_crawl_delay_as_a_ceiling() -> None:
    site = Politeness(rate_per_s=5, burst=3, max_concurrency=8)
    robots = crawl_delay_policy(2.0)
    assert robots == Politeness(rate_per_s=0.5, burst=1, max_concurrency=1)
    assert strictest(site, robots, None) == Politeness(rate_per_s=0.5, burst=1,
                                                       max_concurrency=1)
    assert strictest(None, None) is None
    assert crawl_delay_policy(0) is None and crawl_delay_policy(None) is None


# -- one URL's trouble is not the host's ------------------------------------------------
def _good(key: str, throttle: RedisThrottle, n: int = 40, at: float = T0) -> float:
    """``n`` good answers from distinct URLs, 10 ms apart, from ``at``; the time after."""
    for i in range(n):
        at += 0.01
        throttle.observe(key, [Observation(0.01, 200, None, at, f"/page/{i}")], now=at)
    return at


def _fail(throttle: RedisThrottle, key: str, status: int, urls: list[str], at: float,
          gap_s: float = 1.5) -> float:
    """One failure per URL of ``urls``, ``gap_s`` apart (past the hold); the time after."""
    for url in urls:
        at += gap_s
        throttle.observe(key, [Observation(0.01, status, None, at, url)], now=at)
    return at


@pytest.mark.parametrize("status", [429, 500, 0])
def test_one_url_failing_again_and_again_never_cuts_the_hosts_rate(
        throttle: RedisThrottle, status: int) -> None:
    at = _good("one", throttle, n=150)  # as below, where the same failures do cut it
    at = _fail(throttle, "one", status, ["/bad"] * 20, at)
    state = throttle.state("one")
    assert state["decreases"] <= 1, state  # the first 429 is news; its repeats are not
    if status != 429:
        assert state["phase"] == "start", state  # one 5xx URL among 40 good: no signal


@pytest.mark.parametrize("status", [429, 500])
def test_the_same_failures_across_many_urls_are_the_hosts_distress(
        throttle: RedisThrottle, status: int) -> None:
    at = _good("many", throttle, n=150)  # a 5xx share that rises counts, not a steady one
    at = _fail(throttle, "many", status, [f"/bad/{i}" for i in range(20)], at)
    state = throttle.state("many")
    assert state["phase"] == "steady" and state["decreases"] >= 2, state


def test_a_url_that_answered_well_is_news_when_it_fails_again(
        throttle: RedisThrottle) -> None:
    at = _good("healed", throttle)
    at = _fail(throttle, "healed", 429, ["/x"], at)
    at += 1.5
    throttle.observe("healed", [Observation(0.01, 200, None, at, "/x")], now=at)
    _fail(throttle, "healed", 429, ["/x"], at)
    assert throttle.state("healed")["decreases"] == 2


def test_one_slow_path_makes_no_latency_signal_but_every_path_slow_does(
        throttle: RedisThrottle) -> None:
    at = _good("slow-one", throttle)
    for i in range(10):  # one path that takes 3 s, among fast ones
        at += 0.2
        throttle.observe("slow-one", [Observation(3.0, 200, None, at, "/slow"),
                                      Observation(0.01, 200, None, at, f"/p{i}"),
                                      Observation(0.01, 200, None, at, f"/q{i}")], now=at)
    assert throttle.state("slow-one")["phase"] == "start"
    at = _good("slow-all", throttle)
    for i in range(10):
        at += 0.2
        throttle.observe("slow-all", [Observation(3.0, 200, None, at, f"/p{i}{j}")
                                      for j in range(3)], now=at)
    assert throttle.state("slow-all")["phase"] == "steady"


def test_an_idle_key_forgets_what_it_learnt(redis_client: redis.Redis) -> None:
    throttle = RedisThrottle(redis_client, ThrottleSettings(forget_s=60))
    at = _good("defended", throttle)
    control = throttle.observe("defended", [Observation(0.01, 429, None, at + 1)], now=at + 1)
    assert control.phase == "steady" and control.ceiling_per_s
    soon = throttle.observe("defended", [], now=at + 30)
    assert soon.phase == "steady"  # a pause within the job keeps it
    later = throttle.observe("defended", [], now=at + 100)
    assert later.phase == "start" and later.ceiling_per_s is None
    assert later.policy.rate_per_s is None


def test_fast_clean_answers_open_the_window_twice_as_fast(throttle: RedisThrottle) -> None:
    fast = throttle.observe("fast", [Observation(0.01, 200, None, T0 + 0.1)] * 10, now=T0 + 0.1)
    slow = throttle.observe("slow", [Observation(0.2, 200, None, T0 + 0.1)] * 10, now=T0 + 0.1)
    start_window = ThrottleSettings().start_concurrency
    assert fast.policy.max_concurrency == start_window + 20
    assert slow.policy.max_concurrency == start_window + 10


def test_the_window_stops_counting_a_request_past_its_stale_time(
        redis_client: redis.Redis) -> None:
    """A hung request holds its lease, but not the window: past ``stale_after_s`` (set by
    the throttle from the host's latency) the next request goes; without it, it waits."""
    limiter = limiter_from_redis(redis_client)
    adaptive = Politeness(max_concurrency=1, stale_after_s=0.3)
    hung = limiter.try_acquire("hangs", adaptive)
    assert not isinstance(hung, Wait)
    assert isinstance(limiter.try_acquire("hangs", adaptive), Wait)
    declared = Politeness(max_concurrency=1)
    held = limiter.try_acquire("strict", declared)
    assert not isinstance(held, Wait)
    time.sleep(0.4)
    assert not isinstance(limiter.try_acquire("hangs", adaptive), Wait)
    assert isinstance(limiter.try_acquire("strict", declared), Wait)
    hung.release()
    held.release()


def test_the_throttle_sets_a_stale_time_only_without_a_declared_cap(
        throttle: RedisThrottle) -> None:
    assert (throttle.current("free").stale_after_s or 0) >= 1.0
    assert throttle.current("capped", Politeness(max_concurrency=4)).stale_after_s is None
