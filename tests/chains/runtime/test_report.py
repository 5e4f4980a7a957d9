"""``Job.report()`` and ``Job.overview()``: what an operator asks first, from the ledger."""

from __future__ import annotations

import io
import time

import redis
from rich.console import Console

from chains.runtime.job import Job
from chains.runtime.ledger import Failure, Ledger
from chains.runtime.metrics import Metrics, Tally
from chains.runtime.report import (
    failure_groups_table,
    failures_table,
    job_report,
    print_summary,
    progress,
    summary_table,
)


def fail(unit: str, step: str, error: str, message: str) -> Failure:
    now = time.time()
    return Failure(unit, step, {"user_id": unit}, error, message, 1, now, now,
                   url=f"https://example.org/users/{unit}")


def a_job_with_failures(ledger: Ledger) -> Job:
    """10 user_info units: 4 done, 3 not found, 1 parse error, 2 still pending."""
    ledger.create_job("j1", {"name": "demo"}, {"page": 1})
    ledger.register("j1", [(f"u{i}", "user_info") for i in range(10)])
    for i in range(4):
        ledger.finish("j1", f"u{i}", "user_info", "done", items=1)
    for i in range(4, 7):
        ledger.finish("j1", f"u{i}", "user_info", "failed",
                      failure=fail(f"u{i}", "user_info", "NotFound", "404 Not Found"))
    ledger.finish("j1", "u7", "user_info", "failed",
                  failure=fail("u7", "user_info", "ParseError", "no div.profile"))
    return Job("j1", Ledger(ledger.redis))


def render(renderable: object) -> str:
    console = Console(record=True, width=120, file=io.StringIO())
    console.print(renderable)
    return console.export_text()


def test_overview_counts_progress_and_average_throughput(redis_client: redis.Redis) -> None:
    view = a_job_with_failures(Ledger(redis_client)).overview()
    assert (view["state"], view["pending"]) == ("running", 2)
    assert view["progress"] == {"finished": 8, "known": 10, "fraction": 0.8}
    assert view["totals"]["items"] == 4
    assert view["throughput"]["average"] > 0
    assert view["throughput"]["now"] is None  # no pace counted: the caller falls back
    assert view["finished_at"] is None and view["created_at"] <= time.time()


def test_overview_groups_failures_by_step_and_error_largest_first_with_examples(
        redis_client: redis.Redis) -> None:
    groups = a_job_with_failures(Ledger(redis_client)).overview(examples=2)["failure_groups"]
    assert [(g["step"], g["error"], g["count"]) for g in groups] == [
        ("user_info", "NotFound", 3), ("user_info", "ParseError", 1)]
    assert groups[0]["reason"] == "NotFound: 404 Not Found"
    assert len(groups[0]["examples"]) == 2
    assert groups[0]["examples"][0]["params"] == {"user_id": "u4"}
    assert groups[0]["urls"] == ["https://example.org/users/u4", "https://example.org/users/u5"]


def test_throughput_now_comes_from_the_pace_the_workers_count(
        redis_client: redis.Redis) -> None:
    job = a_job_with_failures(Ledger(redis_client))
    Metrics(redis_client).send(Tally("demo.h5.user_info").units_finished({"done": 8}), "j1")
    assert job.overview()["throughput"]["now"] > 0


def test_report_prints_state_times_counts_throughput_and_failure_reasons(
        redis_client: redis.Redis) -> None:
    console = Console(record=True, width=120, file=io.StringIO())
    a_job_with_failures(Ledger(redis_client)).report(console)
    text = console.export_text()
    for expected in ("job j1  running", "started 20",
                     "done 4  failed 4  skipped 0  gone 0  pending 2",
                     "throughput now n/a  average", "8/10 units (80.0%)", "user_info",
                     "failures by step and error", "NotFound: 404 Not Found",
                     "https://example.org/users/u4"):
        assert expected in text, expected


def test_a_finished_job_reports_its_end_time_and_a_full_bar(redis_client: redis.Redis) -> None:
    ledger = Ledger(redis_client)
    job = a_job_with_failures(ledger)
    ledger.finish("j1", "u8", "user_info", "done")
    ledger.finish("j1", "u9", "user_info", "skipped")
    view = job.overview()
    assert view["state"] == "finished_with_failures" and view["finished_at"] is not None
    text = render(job_report(view))
    assert "█" * 40 + " 10/10 units (100.0%)" in text
    assert "ended -" not in text


def test_the_launch_views_still_render_from_status(redis_client: redis.Redis) -> None:
    status = a_job_with_failures(Ledger(redis_client)).status()
    assert "user_info" in render(summary_table(status))
    assert "8/10 units" in render(progress(status))
    console = Console(record=True, width=120, file=io.StringIO())
    print_summary(status, console)
    assert "failed units" in console.export_text()


LEAKY = {"reason": "ParseError: no title at https://u:hunter2@shop.example/p?api_key=hunter2",
         "params": {"url": "https://shop.example/p?access_token=hunter2"}}


def test_failure_reasons_and_params_are_shown_with_secrets_masked() -> None:
    status = {"failures": [{"step": "detail", "unit_id": "u1", "reason": LEAKY["reason"]}]}
    view = {"failure_groups": [{"count": 1, "reason": LEAKY["reason"], "step": "detail",
                                "error": "ParseError",
                                "examples": [{"unit_id": "u1", "url": "",
                                              "params": LEAKY["params"]}]}]}
    text = render(failures_table(status)) + render(failure_groups_table(view))
    assert "hunter2" not in text
    assert "u:***@shop.example" in text and "access_token=***" in text


def test_at_80_columns_the_summary_keeps_every_figure_and_failures_show_whole_urls(
        redis_client: redis.Redis) -> None:
    """A column that is 0 everywhere is left out rather than a figure cut; a failed or
    gone unit's URL wraps, whole, so it can be copied."""
    ledger = Ledger(redis_client)
    job = a_job_with_failures(ledger)
    long_url = "https://docs.example.org/reference/" + "section/" * 6 + "page.html"
    ledger.register("j1", [("g1", "user_info")])
    ledger.finish("j1", "g1", "user_info", "gone",
                  failure=Failure("g1", "user_info", {}, "NotFound", "404 Not Found", 1,
                                  time.time(), time.time(), url=long_url))
    console = Console(record=True, width=80, file=io.StringIO())
    print_summary(job.status(), console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "…" not in text
    header = next(line for line in text.splitlines() if "spawned" in line)
    assert header.split() == ["step", "spawned", "done", "failed", "skipped", "gone", "items"]
    assert "https://example.org/users/u4" in text and "gone units" in text
    gone = text.split("gone units", 1)[1].splitlines()
    head = next(line for line in gone if "reason" in line)
    url_at, reason_at = head.index("url"), head.index("reason")
    column = [line[url_at:reason_at].strip() for line in gone[gone.index(head) + 2:]]
    assert "".join(column) == long_url


def test_a_job_with_browser_pages_shows_how_each_page_was_fetched() -> None:
    from rich.console import Console

    from chains.runtime.report import summary_table

    counts = {"spawned": 5, "done": 5, "items": 3, "requests": 5, "rendered": 2}
    status = {"job_id": "j", "state": "finished", "elapsed_s": 1.0,
              "steps": {"lists": {**counts, "requests": 2, "rendered": 2},
                        "product": {**counts, "requests": 3, "rendered": 0}},
              "totals": counts}
    console = Console(width=120, record=True)
    console.print(summary_table(status, 120))
    text = console.export_text()
    assert "rendered" in text and "http" in text
    lines = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()}
    assert lines["product"][-2:] == ["0", "3"] and lines["lists"][-2:] == ["2", "0"]
    assert lines["total"][-2:] == ["2", "3"]
