"""The job ledger on a real Redis: exact, idempotent completion."""

from __future__ import annotations

import logging
import os
import time

import pytest
import redis

from chains.runtime.dispatch import Recorder
from chains.runtime.job_control import JobControl, JobStateError
from chains.runtime.ledger import Carried, Failure, Finish, Ledger
from external_interface import keys


def new_job(r: redis.Redis, job_id: str = "j1") -> Ledger:
    ledger = Ledger(r)
    ledger.create_job(job_id, {"name": "t"}, {"page": 1})
    return ledger


def test_registering_a_unit_twice_counts_it_once(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    assert ledger.register("j1", [("u1", "feed"), ("u2", "feed")]) == {"u1", "u2"}
    assert ledger.register("j1", [("u1", "feed"), ("u3", "feed")]) == {"u3"}
    assert ledger.pending("j1") == 3
    assert ledger.counts("j1")["feed"]["spawned"] == 3


def test_ten_thousand_units_with_payloads_register_in_one_call(redis_client: redis.Redis) -> None:
    """More payloads than Lua can unpack at once (about 8000 values): a launch with 10,000
    root units, or a sitemap's page spawning as many."""
    ledger = new_job(redis_client)
    units = [(f"u{n}", "user") for n in range(10_000)]
    assert len(ledger.register("j1", units, [f'{{"n": {n}}}' for n in range(10_000)])) == 10_000
    assert len(ledger.open_units("j1")) == 10_000 and ledger.pending("j1") == 10_000


def test_job_finishes_exactly_when_the_last_unit_finishes(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("root", "feed")])
    ledger.register("j1", [("child", "user")])  # children come before the parent's finish
    assert ledger.finish("j1", "root", "feed", "done", items=3)
    assert ledger.state("j1") == "running"
    assert ledger.finish("j1", "child", "user", "skipped")
    assert ledger.state("j1") == "finished"
    assert "finished_at" in ledger.meta("j1")


def test_finishing_a_unit_twice_changes_nothing(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("a", "feed"), ("b", "feed")])
    assert ledger.finish("j1", "a", "feed", "done", items=5)
    assert not ledger.finish("j1", "a", "feed", "done", items=5)
    counts = ledger.counts("j1")["feed"]
    assert (counts["done"], counts["items"]) == (1, 5)
    assert ledger.pending("j1") == 1 and ledger.state("j1") == "running"


def test_failed_units_keep_their_params_and_reason(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("bad", "feed")])
    now = time.time()
    failure = Failure("bad", "feed", {"page": "x"}, "InvalidParams", "page: not an int", 1,
                      now, now)
    ledger.finish("j1", "bad", "feed", "failed", failure=failure)
    assert ledger.failures("j1") == [failure]
    assert ledger.state("j1") == "finished_with_failures"


def test_starts_that_ended_cleanly_do_not_count_towards_poison(
        redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("u", "feed")])
    assert ledger.start("j1", "u") == (1, True)
    ledger.end_attempt("j1", ["u"])  # a retry the task scheduled itself
    assert ledger.start("j1", "u") == (1, False)
    assert ledger.start("j1", "u") == (2, False)  # the previous start never ended: a worker died


def test_what_a_units_messages_raised_is_kept_until_it_finishes(
        redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("u", "feed"), ("v", "feed")])
    ledger.record_raise("j1", ["u", "v"], "ValueError: boom")
    ledger.record_raise("j1", ["u"], "ValueError: boom")
    ledger.record_raise("j1", ["u"], "KeyError: 'x'")
    ledger.end_attempt("j1", ["u"])  # a clean end takes back a start, not what was raised
    assert ledger.raises("j1", "u") == {"ValueError: boom": 2, "KeyError: 'x'": 1}
    ledger.finish("j1", "u", "feed", "done")
    assert ledger.raises("j1", "u") == {} and ledger.raises("j1", "v") == {"ValueError: boom": 1}


def test_an_attempt_ended_after_its_twin_finished_the_unit_leaves_no_count(
        redis_client: redis.Redis) -> None:
    """A redelivered message's twin finished the unit; the first one's retry then ends its
    attempt: nothing is left in the finished job (no start count of -1)."""
    ledger = new_job(redis_client)
    ledger.register("j1", [("u", "feed"), ("v", "feed")])
    ledger.begin("j1", ["u", "v"])
    ledger.finish("j1", "u", "feed", "done")
    ledger.end_attempt("j1", ["u", "v"])
    assert redis_client.hgetall(keys.job("j1", "deliveries")) == {}
    assert ledger.start("j1", "v") == (1, False)


def test_a_carriers_record_does_not_outlive_its_job(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("u", "feed")])
    ledger.finish_many("j1", [], carry=Carried("m", ["u"]))
    ledger.finish("j1", "u", "feed", "done")
    assert ledger.state("j1") == "finished"
    assert ledger.carried("j1") == {}


def test_cancelled_job_is_not_marked_finished_later(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("u", "feed")])
    assert JobControl(ledger, Recorder()).cancel("j1") == 1
    ledger.finish("j1", "u", "feed", "done")
    assert ledger.state("j1") == "cancelled"
    assert ledger.counts("j1")["feed"]["cancelled"] == 1 and ledger.pending("j1") == 0


def test_every_key_of_a_job_shares_one_cluster_slot(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client, "jobX")
    ledger.register("jobX", [("u", "feed")])
    ledger.finish("jobX", "u", "feed", "done")
    job_keys = [os.fsdecode(k) for k in redis_client.keys("cc:job:*")]
    assert job_keys and all("{jobX}" in k for k in job_keys)


def test_finishing_many_units_counts_each_once_and_refuses_unknown_ones_whole(
        redis_client: redis.Redis) -> None:
    from chains.runtime.ledger import UnknownUnit

    ledger = new_job(redis_client)
    ledger.register("j1", [("a", "feed"), ("b", "feed"), ("c", "feed")])
    with pytest.raises(UnknownUnit):
        ledger.finish_many("j1", [Finish("a", "feed", "done", 2), Finish("zz", "feed", "done")])
    assert ledger.pending("j1") == 3  # nothing of the refused call was applied
    assert ledger.finish_many("j1", [Finish("a", "feed", "done", 2),
                                     Finish("b", "feed", "skipped")]).count == 2
    assert ledger.finish_many("j1", [Finish("a", "feed", "done", 2),
                                     Finish("c", "feed", "done", 1)]).count == 1
    counts = ledger.counts("j1")["feed"]
    assert (counts["done"], counts["skipped"], counts["items"]) == (2, 1, 3)
    assert ledger.state("j1") == "finished"


def test_begin_reports_finished_units_without_counting_a_start_for_them(
        redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("a", "feed"), ("b", "feed")])
    ledger.finish("j1", "a", "feed", "done")
    begun = ledger.begin("j1", ["a", "b"])
    assert begun.state == "running"
    assert begun.units == [(True, 0, False), (False, 1, True)]
    assert ledger.begin("j1", ["b"]).units == [(False, 2, False)]


def test_a_batchs_statistics_land_with_its_finish_in_one_call(redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("a", "feed")])
    counts = ledger.step_counts("feed", {"requests": 3, "retried": 2, "bans": 0})
    assert ledger.finish_many("j1", [Finish("a", "feed", "done", 1)], counts).count == 1
    feed = ledger.counts("j1")["feed"]
    assert (feed["requests"], feed["retried"], feed["done"]) == (3, 2, 1)
    assert ledger.state("j1") == "finished"
    assert ledger.finish_many("j1", [], ledger.step_counts("feed", {"requests": 1})).count == 0
    assert ledger.counts("j1")["feed"]["requests"] == 4  # a retry's request, after the finish


def test_beginning_a_unit_of_an_unknown_job_creates_nothing(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    begun = ledger.begin("ghost", ["u1"])
    assert begun.state is None and begun.units == [(False, 0, False)]
    assert redis_client.keys("cc:job:*") == []


def test_what_a_message_carries_is_recorded_with_the_finish_and_dropped_when_its_list_ends(
        redis_client: redis.Redis) -> None:
    ledger = new_job(redis_client)
    ledger.register("j1", [("p1", "feed"), ("p2", "feed"), ("kid", "detail")],
                    ["payload-p1", "payload-p2", "payload-kid"])
    ledger.finish_many("j1", [Finish("p1", "feed", "done")], carry=Carried("p1", ["p2", "kid"]))
    assert ledger.carried("j1") == {"p1": ["p2", "kid"]}
    assert ledger.open_payloads("j1", ["p1", "p2", "kid"]) == {
        "p2": "payload-p2", "kid": "payload-kid"}  # p1 finished: no longer open
    ledger.finish_many("j1", [Finish("p2", "feed", "done")], carry=Carried("p1", []))
    assert ledger.carried("j1") == {}
    assert ledger.state("j1") == "running"  # kid is still to come


def test_a_refill_credits_the_job_that_asked_for_it(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    ledger.create_job("refill", {}, {"turn": 0, "requested_by": {"job": "crawl",
                                                                 "step": "user_info"}})
    ledger.credit_requester("refill", {"cookie_refreshes": 1, "captcha_solves": 1})
    counts = ledger.counts("crawl")["user_info"]
    assert (counts["cookie_refreshes"], counts["captcha_solves"]) == (1, 1)


def job_lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records
            if r.name == "chains.runtime.ledger"]


def test_the_job_end_is_one_info_line_from_the_call_that_finished_it(
        redis_client: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="chains.runtime.ledger")
    ledger = new_job(redis_client)
    ledger.register("j1", [("a", "feed"), ("b", "feed")])
    ledger.finish_many("j1", [Finish("a", "feed", "done")])
    assert job_lines(caplog) == []  # b is still open
    ledger.finish_many("j1", [Finish("b", "feed", "done"), Finish("a", "feed", "done")])
    ledger.finish_many("j1", [Finish("b", "feed", "done")])  # a redelivery: no second line
    assert job_lines(caplog) == [("INFO", "job j1 finished")]
    [record] = [r for r in caplog.records if r.name == "chains.runtime.ledger"]
    assert (record.__dict__["job_id"], record.__dict__["event"]) == ("j1", "finished")


def test_a_cancel_is_the_job_end_line_and_a_second_cancel_is_refused(
        redis_client: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    ledger = new_job(redis_client)
    ledger.register("j1", [("a", "feed")])
    control = JobControl(ledger, Recorder())
    control.cancel("j1")
    with pytest.raises(JobStateError, match="only a running or paused job can be cancelled"):
        control.cancel("j1")
    ledger.finish_many("j1", [Finish("a", "feed", "done")])  # a cancelled job never finishes
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if "job j1" in r.getMessage()]
    assert lines == [("INFO", "job j1 cancelled")]


def test_a_job_with_a_failure_ends_in_one_line_naming_its_outcome(
        redis_client: redis.Redis, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="chains.runtime.ledger")
    ledger = new_job(redis_client)
    ledger.register("j1", [("a", "feed")])
    ledger.finish_many("j1", [Finish("a", "feed", "failed")])
    assert job_lines(caplog) == [("INFO", "job j1 finished_with_failures")]
