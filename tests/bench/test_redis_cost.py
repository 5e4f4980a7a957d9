"""The shared-state cost is counted as the issue asks: every command Redis runs (in
scripts and transactions too), one round trip per pipeline, transaction or script, and
kombu's pushes as broker messages; the measuring side's own traffic taken off."""

from __future__ import annotations

import redis

from bench.redis_cost import RedisCost, RedisSnapshot


def test_a_pipeline_a_transaction_and_a_script_are_one_round_trip_each(
        redis_client: redis.Redis) -> None:
    script = redis_client.register_script(
        "for i = 1, 5 do redis.call('HINCRBY', KEYS[1], 'n', 1) end return 1")
    script(keys=["warm"])  # loaded: the measured call is one EVALSHA
    redis_client.ping()
    before = RedisSnapshot.take(redis_client)
    pipe = redis_client.pipeline(transaction=False)
    for i in range(100):
        pipe.set(f"k{i}", i)
    pipe.execute()
    with redis_client.pipeline(transaction=True) as tx:
        tx.set("a", 1)
        tx.set("b", 2)
        tx.execute()
    script(keys=["counter"])
    cost = RedisCost.between(before, RedisSnapshot.take(redis_client))

    assert cost.round_trips == 3
    assert cost.commands == 100 + (1 + 2 + 1) + (1 + 5)  # SETs; MULTI SET SET EXEC; EVALSHA
    assert cost.top["set"] == 102 and cost.top["hincrby"] == 5
    assert cost.messages == 0


def test_queue_pushes_are_broker_messages_and_the_pollers_share_is_taken_off(
        redis_client: redis.Redis) -> None:
    redis_client.ping()
    before = RedisSnapshot.take(redis_client)
    redis_client.lpush("celery", "m1")
    redis_client.rpush("celery", "m0")  # a message put back at the head
    for _ in range(4):  # a launcher polling the job's state
        redis_client.hget("job", "state")
    cost = RedisCost.between(before, RedisSnapshot.take(redis_client), own_commands=4,
                             own_round_trips=4)

    assert (cost.messages, cost.commands, cost.round_trips) == (2, 2, 2)
    figures = cost.figures(units=4, items=8)
    assert figures["broker_messages_per_unit"] == 0.5
    assert figures["redis_round_trips_per_item"] == 0.25
    assert figures["redis_cpu_ms_per_1000_units"] is not None
