"""Cluster-wide politeness on a real Redis, shared by real processes."""

from __future__ import annotations

import multiprocessing
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from config import Politeness
from external_interface.politeness import Grant, Limiter, MustWait, Wait, acquire
from external_interface.politeness.factory import limiter_from_redis
from ops import embedded_redis

FORK = multiprocessing.get_context("fork")
T0 = 1_000_000.0  # a fixed "now" for the deterministic GCRA tests


@pytest.fixture
def limiter(redis_client: redis.Redis) -> Limiter:
    """A strict limiter (no jitter tolerance) with short TTL and penalty caps."""
    return limiter_from_redis(redis_client, lease_ttl_s=1.0, max_penalty_s=2.0,
                              default_penalty_s=0.5, jitter_s=0.0)


def client_like(client: redis.Redis) -> redis.Redis:
    """A new client on the same server and database, for a child process."""
    kw = client.connection_pool.connection_kwargs
    return redis.Redis(unix_socket_path=kw["path"], db=kw["db"])


def granted(answer: Grant | Wait) -> Grant:
    assert isinstance(answer, Grant), answer
    return answer


def refused(answer: Grant | Wait) -> Wait:
    assert isinstance(answer, Wait), answer
    return answer


# -- the rate: GCRA -----------------------------------------------------------
def test_gcra_admits_burst_at_once_then_one_request_per_interval(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=10, burst=3)
    for _ in range(3):
        granted(limiter.try_acquire("site", policy, now=T0))
    assert refused(limiter.try_acquire("site", policy, now=T0)) == Wait(0.1, "rate")
    granted(limiter.try_acquire("site", policy, now=T0 + 0.1))
    assert refused(limiter.try_acquire("site", policy, now=T0 + 0.15)).seconds == \
        pytest.approx(0.05)
    granted(limiter.try_acquire("site", policy, now=T0 + 0.2))


def test_a_refusal_consumes_nothing(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=2, burst=1)
    granted(limiter.try_acquire("site", policy, now=T0))
    for _ in range(5):
        assert refused(limiter.try_acquire("site", policy, now=T0 + 0.1)).seconds == \
            pytest.approx(0.4)
    granted(limiter.try_acquire("site", policy, now=T0 + 0.5))


def test_an_idle_bucket_regains_its_burst(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=10, burst=2)
    for now in (T0, T0):
        granted(limiter.try_acquire("site", policy, now=now))
    for now in (T0 + 10, T0 + 10):
        granted(limiter.try_acquire("site", policy, now=now))
    refused(limiter.try_acquire("site", policy, now=T0 + 10))


def test_the_jitter_tolerance_lets_a_late_caller_keep_the_rate(
    redis_client: redis.Redis,
) -> None:
    tolerant = limiter_from_redis(redis_client, jitter_s=0.01)
    policy = Politeness(rate_per_s=10, burst=1)
    granted(tolerant.try_acquire("site", policy, now=T0))
    assert refused(tolerant.try_acquire("site", policy, now=T0)).seconds == pytest.approx(0.09)
    for woke in (T0 + 0.095, T0 + 0.199, T0 + 0.292):  # told 0.09, 0.19, 0.29; came late
        granted(tolerant.try_acquire("site", policy, now=woke))
    # the schedule did not slip: the next slot is still at 0.4 (admitted from 0.39)
    assert refused(tolerant.try_acquire("site", policy, now=T0 + 0.3)).seconds == \
        pytest.approx(0.09)


def test_the_jitter_tolerance_never_exceeds_one_interval(redis_client: redis.Redis) -> None:
    tolerant = limiter_from_redis(redis_client, jitter_s=10.0)
    policy = Politeness(rate_per_s=10, burst=1)
    granted(tolerant.try_acquire("site", policy, now=T0))
    granted(tolerant.try_acquire("site", policy, now=T0))
    refused(tolerant.try_acquire("site", policy, now=T0))


def test_buckets_are_independent(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=1, burst=1)
    granted(limiter.try_acquire("a.example", policy, now=T0))
    granted(limiter.try_acquire("b.example", policy, now=T0))
    refused(limiter.try_acquire("a.example", policy, now=T0))


def take(limiter: Limiter, bucket: str, policy: Politeness) -> Grant:
    """``acquire``, sleeping a ``MustWait`` as a re-scheduled unit would (a process that
    keeps losing the race for the next slot on a loaded machine spends its inline budget)."""
    while True:
        try:
            return acquire(limiter, bucket, policy, max_inline_wait_s=1.0)
        except MustWait as wait:
            time.sleep(wait.seconds)


def _grant_times(client: redis.Redis, rate: float, seconds: float) -> None:
    """Child: acquire for ``seconds`` and push the time of each grant."""
    own = client_like(client)
    limiter = limiter_from_redis(own)
    policy, stop = Politeness(rate_per_s=rate, burst=1), time.time() + seconds
    while time.time() < stop:
        with take(limiter, "shared", policy):
            own.rpush("grants", repr(time.time()))


def run_children(target: Any, *args: Any, count: int = 2) -> None:
    """Start ``count`` forked children running ``target(*args)`` and wait for them."""
    children = [FORK.Process(target=target, args=args) for _ in range(count)]
    for child in children:
        child.start()
    for child in children:
        child.join(timeout=30)
        assert child.exitcode == 0


def test_two_processes_sharing_a_bucket_together_stay_within_the_rate(
    redis_client: redis.Redis,
) -> None:
    rate, seconds = 20.0, 3.0
    run_children(_grant_times, redis_client, rate, seconds)
    times = sorted(float(t) for t in redis_client.lrange("grants", 0, -1))
    busiest = max(sum(1 for t in times if start <= t < start + 1.0) for start in times)
    assert busiest <= rate + 2  # burst 1, plus one for client-side timestamps
    measured = (len(times) - 1) / (times[-1] - times[0])
    assert measured == pytest.approx(rate, rel=0.05)


# -- concurrency ---------------------------------------------------------------
def _hold_slots(client: redis.Redis, seconds: float) -> None:
    """Child: for ``seconds``, take a slot, hold it 20 ms, push (start, end)."""
    own = client_like(client)
    limiter = limiter_from_redis(own)
    policy, stop = Politeness(max_concurrency=2), time.time() + seconds
    while time.time() < stop:
        with take(limiter, "capped", policy):
            start = time.time()
            time.sleep(0.02)
            own.rpush("holds", f"{start}:{time.time()}")


def most_at_once(intervals: list[tuple[float, float]]) -> int:
    """The largest number of intervals that overlap at one moment."""
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    current = peak = 0
    for _, step in edges:
        current += step
        peak = max(peak, current)
    return peak


def test_concurrency_cap_holds_across_processes(redis_client: redis.Redis) -> None:
    run_children(_hold_slots, redis_client, 1.5, count=4)
    raw = [os.fsdecode(item).split(":") for item in redis_client.lrange("holds", 0, -1)]
    intervals = [(float(s), float(e)) for s, e in raw]
    assert most_at_once(intervals) == 2
    assert len(intervals) > 60  # the cap is used, not just respected


def test_a_grant_releases_its_lease_on_exit_once(limiter: Limiter) -> None:
    policy = Politeness(max_concurrency=1)
    with granted(limiter.try_acquire("site", policy)) as grant:
        assert refused(limiter.try_acquire("site", policy)).reason == "concurrency"
    grant.release()
    granted(limiter.try_acquire("site", policy)).release()
    assert limiter.state("site")["leases_held"] == 0


def _hold_forever(client: redis.Redis, ready: Any) -> None:
    """Child: take the only slot, say so, then hang until killed."""
    limiter = limiter_from_redis(client_like(client), lease_ttl_s=1.0)
    limiter.try_acquire("site", Politeness(max_concurrency=1))
    ready.set()
    time.sleep(60)


def test_the_lease_of_a_killed_holder_expires_after_the_ttl(
    redis_client: redis.Redis, limiter: Limiter
) -> None:
    ready = FORK.Event()
    child = FORK.Process(target=_hold_forever, args=(redis_client, ready))
    child.start()
    assert ready.wait(timeout=10)
    assert child.pid is not None
    os.kill(child.pid, signal.SIGKILL)
    child.join()
    wait = refused(limiter.try_acquire("site", Politeness(max_concurrency=1)))
    assert wait.reason == "concurrency" and 0 < wait.seconds <= 1.0
    time.sleep(1.05)
    granted(limiter.try_acquire("site", Politeness(max_concurrency=1)))


def test_a_release_its_redis_never_hears_is_logged_not_raised(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The fetch it guarded is done; its response must not be lost with the release."""
    server = embedded_redis.start(tmp_path, tmp_path / "gone.sock")
    limiter = limiter_from_redis(redis.Redis(unix_socket_path=str(tmp_path / "gone.sock")),
                                 lease_ttl_s=14.0)
    grant = granted(limiter.try_acquire("site", Politeness(max_concurrency=2)))
    server.kill()
    server.wait(timeout=10)
    grant.release()
    assert "the slot of site was not given back" in caplog.text
    assert "frees itself within 14 s" in caplog.text


def test_a_concurrency_wait_follows_the_mean_hold_time(limiter: Limiter) -> None:
    policy = Politeness(max_concurrency=1)
    with granted(limiter.try_acquire("site", policy)):
        time.sleep(0.2)
    with granted(limiter.try_acquire("site", policy)):
        wait = refused(limiter.try_acquire("site", policy))
    assert 0.15 < wait.seconds <= 0.25


# -- penalties (429 + Retry-After) ----------------------------------------------
def test_a_penalty_blocks_every_caller_until_it_ends(redis_client: redis.Redis) -> None:
    hosts = [limiter_from_redis(client_like(redis_client)) for _ in range(2)]
    policy = Politeness()  # no limits: the cooldown still applies
    assert hosts[0].penalize("site", 0.5) == pytest.approx(0.5)
    for host in hosts:
        wait = refused(host.try_acquire("site", policy))
        assert wait.reason == "cooldown" and 0.4 < wait.seconds <= 0.5
    time.sleep(0.5)
    for host in hosts:
        granted(host.try_acquire("site", policy))


def test_a_penalty_is_capped_at_the_maximum(limiter: Limiter) -> None:
    assert limiter.penalize("site", 3600) == 2.0
    assert refused(limiter.try_acquire("site", Politeness())).seconds <= 2.0


def test_a_penalty_without_retry_after_uses_the_default(limiter: Limiter) -> None:
    assert limiter.penalize("site") == 0.5


def test_a_shorter_penalty_never_shortens_a_longer_one(limiter: Limiter) -> None:
    limiter.penalize("site", 2.0)
    assert limiter.penalize("site", 0.1) > 1.0


def test_after_a_penalty_the_bucket_resumes_at_its_rate_not_with_a_burst(
    limiter: Limiter,
) -> None:
    policy = Politeness(rate_per_s=10, burst=5)
    granted(limiter.try_acquire("site", policy))
    limiter.penalize("site", 0.3)
    time.sleep(0.3)
    granted(limiter.try_acquire("site", policy))
    assert refused(limiter.try_acquire("site", policy)).reason == "rate"


# -- acquire: sleep a little, or hand the wait back -------------------------------
def test_acquire_sleeps_through_a_short_wait(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=10, burst=1)
    acquire(limiter, "site", policy).release()
    began = time.monotonic()
    acquire(limiter, "site", policy, max_inline_wait_s=1.0).release()
    assert 0.08 < time.monotonic() - began < 0.3


def test_acquire_hands_a_long_wait_back_capped(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=0.01, burst=1)
    acquire(limiter, "site", policy).release()
    with pytest.raises(MustWait) as caught:
        acquire(limiter, "site", policy, max_inline_wait_s=1.0, max_wait_s=5.0)
    assert caught.value.seconds == 5.0 and caught.value.reason == "rate"


def test_acquire_never_sleeps_past_the_deadline(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=2, burst=1)
    acquire(limiter, "site", policy).release()
    began = time.monotonic()
    with pytest.raises(MustWait) as caught:
        acquire(limiter, "site", policy, max_inline_wait_s=1.0, deadline=began + 0.2)
    assert time.monotonic() - began < 0.1
    assert 0.4 < caught.value.seconds <= 0.5


def test_waits_never_exceed_the_caps(limiter: Limiter) -> None:
    limiter.penalize("site", 1e9)
    with pytest.raises(MustWait) as caught:
        acquire(limiter, "site", Politeness(), max_inline_wait_s=0.1, max_wait_s=1.5)
    assert caught.value.seconds == 1.5
    assert refused(limiter.try_acquire("site", Politeness())).seconds <= 2.0


# -- the monitor's view and the contract ------------------------------------------
def test_state_shows_policy_rate_estimate_cooldown_and_leases(limiter: Limiter) -> None:
    policy = Politeness(rate_per_s=50, burst=10, max_concurrency=3)
    grants = [granted(limiter.try_acquire("site", policy)) for _ in range(3)]
    limiter.penalize("site", 1.0)
    state = limiter.state("site")
    assert (state["rate_per_s"], state["burst"], state["max_concurrency"]) == (50.0, 10, 3)
    assert state["leases_held"] == 3 and state["penalties"] == 1
    assert 0.9 < state["cooldown_remaining_s"] <= 1.0
    assert state["rate_estimate_per_s"] > 0
    for grant in grants:
        grant.release()
    assert limiter.state("site")["leases_held"] == 0
    assert limiter.buckets() == ["site"]


def test_bucket_names_with_braces_are_refused(limiter: Limiter) -> None:
    with pytest.raises(ValueError, match="braces"):
        limiter.try_acquire("a{b}", Politeness())


def test_the_redis_limiter_satisfies_the_protocol(limiter: Limiter) -> None:
    assert isinstance(limiter, Limiter)


@pytest.fixture(autouse=True)
def _no_stray_children() -> Iterator[None]:
    yield
    for child in multiprocessing.active_children():
        child.kill()
