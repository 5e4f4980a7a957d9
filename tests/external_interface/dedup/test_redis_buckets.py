"""The bucket store on a real Redis: what it remembers, how compactly, how rarely it errs."""

from __future__ import annotations

import hashlib
import time
from pathlib import Path

import pytest
import redis

from external_interface import keys
from external_interface.dedup import (
    DedupStore,
    RecrawlPolicy,
    Seen,
    content_hash,
)
from external_interface.dedup.factory import dedup_from_settings
from external_interface.dedup.redis_buckets import (
    BucketLayout,
    RedisBucketStore,
)

HOUR = 3600
DAY = 24 * HOUR


def fp(i: int) -> bytes:
    """A fingerprint, as ``utils.fingerprint`` would give."""
    return hashlib.sha1(i.to_bytes(8, "big")).digest()


@pytest.fixture
def store(redis_client: redis.Redis) -> RedisBucketStore:
    return RedisBucketStore.from_settings(redis_client, "test", expected_entries=10_000)


def now() -> int:
    return int(time.time())


def test_store_satisfies_the_protocol(redis_client: redis.Redis) -> None:
    assert isinstance(dedup_from_settings(redis_client, "test", 1000), DedupStore)


def test_marked_key_is_seen_with_its_hour_and_content_hash(store: RedisBucketStore) -> None:
    when = now() - 3 * HOUR
    store.mark(fp(1), content_hash(b"page"), when)
    assert store.seen(fp(1)) == Seen(when // HOUR * HOUR, content_hash(b"page") & 0xFF)


def test_unmarked_key_is_unseen(store: RedisBucketStore) -> None:
    store.mark(fp(1), 7)
    assert store.seen(fp(2)) is None


def test_marking_again_overwrites_time_and_hash(store: RedisBucketStore) -> None:
    later = now()
    store.mark(fp(1), 7, later - 2 * DAY)
    store.mark(fp(1), 9, later)
    assert store.seen(fp(1)) == Seen(later // HOUR * HOUR, 9)


def test_time_two_years_back_reads_back_exactly_to_the_hour(store: RedisBucketStore) -> None:
    when = now() - 2 * 365 * DAY
    store.mark(fp(1), 0, when)
    seen = store.seen(fp(1))
    assert seen is not None and seen.last_seen == when // HOUR * HOUR


def test_changed_is_true_for_a_new_key_or_new_content_only(store: RedisBucketStore) -> None:
    assert store.changed(fp(1), content_hash(b"v1"))
    store.mark(fp(1), content_hash(b"v1"))
    assert not store.changed(fp(1), content_hash(b"v1"))
    assert store.changed(fp(1), content_hash(b"v2"))


def test_batches_answer_in_the_order_asked(store: RedisBucketStore) -> None:
    store.mark_many((fp(i), i) for i in range(0, 3000, 2))
    answers = store.seen_many([fp(i) for i in range(3000)])
    assert [a is not None for a in answers] == [i % 2 == 0 for i in range(3000)]
    assert [a.content_hash for a in answers if a] == [i & 0xFF for i in range(0, 3000, 2)]


def test_skip_within_the_ttl(store: RedisBucketStore) -> None:
    store.mark(fp(1), 0, now() - 2 * HOUR)
    assert RecrawlPolicy(ttl_s=DAY).decide(store.seen(fp(1)), now()) == "skip"


def test_fetch_after_the_ttl(store: RedisBucketStore) -> None:
    store.mark(fp(1), 0, now() - 2 * DAY)
    assert RecrawlPolicy(ttl_s=DAY).decide(store.seen(fp(1)), now()) == "fetch"


def test_a_store_in_seconds_skips_within_a_ttl_of_seconds(redis_client: redis.Redis) -> None:
    store = RedisBucketStore.from_settings(redis_client, "test", 1000, stamp_unit_s=1)
    marked = now() - 1
    store.mark(fp(1), 0, marked)
    policy = RecrawlPolicy(ttl_s=3)
    assert store.seen(fp(1)) == Seen(marked, 0)
    assert policy.decide(store.seen(fp(1)), marked + 2) == "skip"
    assert policy.decide(store.seen(fp(1)), marked + 3) == "fetch"


def test_the_horizon_is_65536_stamp_units() -> None:
    assert BucketLayout(1, 1, 1, stamp_unit_s=1).horizon_s == 65_536
    assert BucketLayout(1, 1, 1).horizon_s > 7 * 365 * DAY


def test_volatile_pages_are_always_fetched(store: RedisBucketStore) -> None:
    store.mark(fp(1), 0)
    assert RecrawlPolicy(ttl_s=DAY, volatile=True).decide(store.seen(fp(1)), now()) == "fetch"


def test_unseen_keys_are_fetched(store: RedisBucketStore) -> None:
    assert RecrawlPolicy(ttl_s=DAY).decide(store.seen(fp(1)), now()) == "fetch"


def test_bucket_hashes_stay_compact_even_when_overfilled(redis_client: redis.Redis) -> None:
    store = RedisBucketStore.from_settings(redis_client, "test", 1000)
    store.mark_many((fp(i), i) for i in range(5 * 1000))
    for bucket in range(store.layout.buckets):
        name = keys.dedup_bucket("test", bucket)
        assert redis_client.object("encoding", name) in (b"listpack", b"ziplist")


def test_a_full_sub_bucket_forgets_its_oldest_key(redis_client: redis.Redis) -> None:
    store = RedisBucketStore(redis_client, "test", BucketLayout(buckets=1, subs=1, capacity=2))
    store.mark(fp(1), 0, now() - 3 * HOUR)
    store.mark(fp(2), 0, now() - 2 * HOUR)
    store.mark(fp(3), 0, now() - 1 * HOUR)
    assert [s is not None for s in store.seen_many([fp(1), fp(2), fp(3)])] == [False, True, True]


def test_false_duplicates_are_rarer_than_one_in_a_hundred_thousand(
    store: RedisBucketStore,
) -> None:
    store.mark_many((fp(i), 0) for i in range(10_000))
    answers = store.seen_many([fp(i) for i in range(10_000, 210_000)])
    assert sum(a is not None for a in answers) <= 2  # expected 0.05 at 2.4e-7 per key


def test_sizing_fills_sub_buckets_to_four_records_within_default_limits() -> None:
    layout = BucketLayout.sized(10_000_000, max_entries=128, max_value=64)
    assert (layout.subs, layout.capacity) == (127, 10)
    assert layout.buckets * layout.subs * 4 >= 10_000_000


def test_layout_follows_a_server_with_lower_hash_limits(redis_client: redis.Redis) -> None:
    original = redis_client.config_get("hash-max-ziplist-entries")["hash-max-ziplist-entries"]
    redis_client.config_set("hash-max-ziplist-entries", 32)
    try:
        store = RedisBucketStore.from_settings(redis_client, "test", 1000)
        store.mark_many((fp(i), i) for i in range(3000))
        assert store.layout.subs == 31
        for bucket in range(store.layout.buckets):
            name = keys.dedup_bucket("test", bucket)
            assert redis_client.object("encoding", name) in (b"listpack", b"ziplist")
    finally:
        redis_client.config_set("hash-max-ziplist-entries", original or 128)


def test_the_first_caller_pins_the_layout(redis_client: redis.Redis) -> None:
    first = RedisBucketStore.from_settings(redis_client, "test", 1000, stamp_unit_s=1)
    later = RedisBucketStore.from_settings(redis_client, "test", 10_000_000, stamp_unit_s=60)
    assert later.layout == first.layout
    assert later.layout.stamp_unit_s == 1


def test_a_decoding_client_is_refused(redis_socket: Path) -> None:
    client = redis.Redis(unix_socket_path=str(redis_socket), decode_responses=True)
    with pytest.raises(ValueError, match="decode_responses"):
        RedisBucketStore(client, "test", BucketLayout(1, 1, 1))
