"""Metrics: cluster-wide counters in Redis hashes, labelled by task and one bounded label."""

from __future__ import annotations

import os
from pathlib import Path

import redis

from chains.runtime.metrics import (
    FETCH_BUCKETS,
    PACE_BUCKET_S,
    PACE_KEEP_BUCKETS,
    Metrics,
    Tally,
    histogram,
    task_labels,
)
from external_interface import keys

FEED = "demo.h5.feed"


class Clock:
    """A settable clock: pace buckets depend on the time of each call."""

    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_unit_events_add_up_per_task_and_outcome(redis_client: redis.Redis) -> None:
    metrics = Metrics(redis_client)
    metrics.send(Tally(FEED).started(3).units_finished({"done": 1, "skipped": 1, "failed": 1},
                                                       {"NotFound": 1}).retried(2, rotated=1))
    metrics.send(Tally("demo.app.detail").units_finished({"done": 1}))
    data = metrics.read()
    assert [data.get("units", FEED, e) for e in ("started", "done", "skipped", "failed",
                                                 "retried", "rotated")] == [3, 1, 1, 1, 2, 1]
    assert data.get("errors", FEED, "NotFound") == 1
    assert data.total("units", "done") == 2


def test_counts_from_two_clients_add_up_in_one_place(redis_client: redis.Redis,
                                                     redis_socket: Path) -> None:
    """Two hosts are two clients on the same Redis: their numbers sum."""
    db = redis_client.connection_pool.connection_kwargs["db"]
    other_host = redis.Redis(unix_socket_path=str(redis_socket), db=db)
    Metrics(redis_client).send(Tally(FEED).units_finished({"done": 4, "failed": 1},
                                                          {"ParseError": 1}))
    Metrics(other_host).send(Tally(FEED).units_finished({"done": 6}))
    data = Metrics(redis_client).read()
    assert data.get("units", FEED, "done") == 10
    assert data.get("errors", FEED, "ParseError") == 1
    other_host.close()


def test_fetches_count_status_bytes_and_a_cumulative_duration_histogram(
        redis_client: redis.Redis) -> None:
    metrics = Metrics(redis_client)
    metrics.send(Tally(FEED).fetched(200, 1000, 0.03))
    metrics.send(Tally(FEED).fetched(200, 500, 0.7))
    metrics.send(Tally(FEED).fetched(503, 20, 45.0))
    metrics.send(Tally(FEED).fetched(0, 0, 4.0))  # no response at all
    data = metrics.read()
    assert data.get("status", FEED, "200") == 2
    assert data.get("status", FEED, "503") == 1
    assert data.get("status", FEED, "0") == 1
    assert data.get("bytes", FEED) == 1520
    cumulative = dict(histogram(data, "fetch_s", FEED))
    assert len(cumulative) == len(FETCH_BUCKETS) + 1
    assert (cumulative["0.05"], cumulative["1.0"], cumulative["5.0"], cumulative["+Inf"]) == (
        1, 2, 3, 4)
    assert data.get("fetch_s", FEED, "count") == 4
    assert abs(data.get("fetch_s", FEED, "sum") - 49.73) < 1e-6


def test_parse_durations_and_stored_items(redis_client: redis.Redis) -> None:
    metrics = Metrics(redis_client)
    metrics.send(Tally(FEED).parsed(0.002))
    metrics.send(Tally(FEED).stored(10))
    metrics.send(Tally(FEED).stored(0))
    data = metrics.read()
    assert dict(histogram(data, "parse_s", FEED))["0.005"] == 1
    assert data.get("items", FEED) == 10


def test_labels_are_the_task_parts_and_a_bounded_label_never_a_url(
        redis_client: redis.Redis) -> None:
    metrics = Metrics(redis_client)
    weird = "Weird Error!<script>" + "x" * 200
    metrics.send(Tally(FEED).units_finished({"failed": 1}, {weird: 1}))
    fields = [os.fsdecode(f) for f in redis_client.hkeys(keys.metrics("errors"))]
    [label] = [f.split("|", 1)[1] for f in fields]
    assert len(label) <= 64 and label.replace("_", "").isalnum()
    assert task_labels(FEED) == {"site": "demo", "platform": "h5", "step": "feed"}
    assert task_labels("odd") == {"site": "odd", "platform": "", "step": ""}


def test_pace_is_none_until_counted_then_units_per_second_over_the_window(
        redis_client: redis.Redis) -> None:
    clock = Clock(1_000_000.0)
    metrics = Metrics(redis_client, clock=clock)
    assert metrics.pace("job1") is None
    metrics.send(Tally(FEED).units_finished({"done": 30}), "job1")
    clock.now += 10
    metrics.send(Tally(FEED).units_finished({"done": 30}), "job1")
    assert metrics.pace("job1", window_s=30) == 60 / 30
    assert metrics.pace("job1", window_s=30, since=clock.now - 12) == 60 / 12  # a young job
    clock.now += 60
    assert metrics.pace("job1", window_s=30) == 0.0


def test_pace_prunes_old_buckets_so_a_long_job_keeps_a_small_hash(
        redis_client: redis.Redis) -> None:
    clock = Clock(2_000_000.0)
    metrics = Metrics(redis_client, clock=clock)
    for _ in range(PACE_KEEP_BUCKETS * 3):
        metrics.send(Tally(FEED).units_finished({"done": 1}), "long")
        clock.now += PACE_BUCKET_S
    assert redis_client.hlen(keys.job_pace("long")) <= PACE_KEEP_BUCKETS + 1
    assert 0 < redis_client.ttl(keys.job_pace("long")) <= 86_400


def test_a_jobs_life_is_every_bucket_from_its_start_to_its_end_in_5_s_then_in_minutes(
        redis_client: redis.Redis) -> None:
    start = 3_000_000.0  # a multiple of 60: buckets begin with it
    clock = Clock(start)
    metrics = Metrics(redis_client, clock=clock)
    metrics.send(Tally(FEED).units_finished({"done": 10}), "life")
    clock.now += 12
    metrics.send(Tally(FEED).units_finished({"done": 5}), "life")
    width, points = metrics.life("life", start, start + 14)
    assert width == 5 and points == [(3_000_000, 10), (3_000_005, 0), (3_000_010, 5)]
    for _ in range(PACE_KEEP_BUCKETS * 2):  # twenty minutes: older 5 s buckets are pruned
        clock.now += PACE_BUCKET_S
        metrics.send(Tally(FEED).units_finished({"done": 1}), "life")
    width, points = metrics.life("life", start, clock.now)
    assert width == 60 and points[0] == (3_000_000, 10 + 5 + 9)
    assert sum(n for _, n in points) == 15 + PACE_KEEP_BUCKETS * 2


def test_a_batch_tally_adds_up_like_single_points_in_one_round_trip(
        redis_client: redis.Redis) -> None:
    tally = Tally(FEED).started(3).fetched(200, 100, 0.07).fetched(200, 50, 0.2)
    tally.fetched(404, 0, 0.01).parsed(0.002).parsed(0.003).stored(4)
    tally.units_finished({"done": 2, "failed": 1}, {"NotFound": 1})
    pipe = redis_client.pipeline(transaction=False)
    tally.write(pipe)
    assert len(pipe.command_stack) < 20  # points of a kind are summed, not sent one by one
    pipe.execute()
    data = Metrics(redis_client).read()
    assert data.get("units", FEED, "started") == 3
    assert (data.get("status", FEED, "200"), data.get("status", FEED, "404")) == (2, 1)
    assert data.get("bytes", FEED) == 150 and data.get("items", FEED) == 4
    assert data.get("fetch_s", FEED, "count") == 3
    assert abs(data.get("fetch_s", FEED, "sum") - 0.28) < 1e-9
    assert dict(histogram(data, "fetch_s", FEED))["0.1"] == 2
    assert data.get("parse_s", FEED, "count") == 2
    assert data.get("errors", FEED, "NotFound") == 1
