"""Launching: one INFO line per job started, and further root units (a generic crawl's
several starts and its sitemaps)."""

from __future__ import annotations

import logging

import pytest

from chains.crawl import crawl
from chains.demo import demo
from chains.runtime.checks import ChainError
from chains.runtime.context import Runtime
from chains.runtime.dispatch import Recorder
from chains.runtime.launch import launch, launch_many
from chains.runtime.model import Chain, Step


def started(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "chains.runtime.launch"]


def test_each_job_launched_is_one_info_line_with_its_id_and_chain(
        runtime: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="chains.runtime.launch")
    one = launch(demo, {"page": 1}, runtime=runtime)
    shards = launch_many(demo, [{"page": 2}, {"page": 3}], runtime=runtime)
    records = started(caplog)
    assert [(r.levelname, r.getMessage()) for r in records] == [
        ("INFO", f"job {job.job_id} started") for job in [one, *shards]]
    assert {(r.__dict__["job_id"], r.__dict__["chain"]) for r in records} == {
        (job.job_id, "demo") for job in [one, *shards]}


def test_a_launch_refused_by_the_checks_logs_no_start(
        runtime: Runtime, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="chains.runtime.launch")
    broken = Chain(name="broken", start="feed", steps={"feed": Step(task="demo.h5.nowhere")})
    with pytest.raises(ChainError, match=r"demo\.h5\.nowhere"):
        launch(broken, {"page": 1}, runtime=runtime)
    assert started(caplog) == []


def test_further_roots_of_any_step_start_at_depth_0_each_once(runtime: Runtime) -> None:
    job = launch(crawl, {"url": "http://a.test/"}, runtime=runtime, roots={
        "page": [{"url": "http://b.test/"}, {"url": "http://a.test/"}],
        "sitemap": [{"url": "http://a.test/sitemap.xml", "level": 0}]})
    assert isinstance(runtime.dispatch, Recorder)
    sent = {(m.envelope["step"], m.envelope["depth"], u["params"]["url"])
            for m in runtime.dispatch.sent for u in m.units}
    assert sent == {("page", 0, "http://a.test/"), ("page", 0, "http://b.test/"),
                    ("sitemap", 0, "http://a.test/sitemap.xml")}
    assert runtime.ledger.pending(job.job_id) == 3


def test_a_root_of_a_step_the_chain_lacks_is_refused_naming_it(runtime: Runtime) -> None:
    with pytest.raises(ChainError, match="root units name feeds, not steps of the chain"):
        launch(crawl, {"url": "http://a.test/"}, runtime=runtime, roots={"feeds": [{}]})


def test_a_sharded_launch_fixes_each_jobs_own_params_and_site_settings(
        runtime: Runtime) -> None:
    shards = launch_many(demo, [{"page": 2}, {"page": 3, "base_url": "http://b.test"},
                                {"page": 4}], runtime=runtime,
                         settings={"demo": {"http_cache": True}})
    fixed = [(runtime.ledger.meta(job.job_id)["params"],
              runtime.ledger.settings_of(job.job_id)["demo"]) for job in shards]
    assert [params for params, _ in fixed] == ['{"page": 2}', '{"page": 3}', '{"page": 4}']
    assert fixed[1][1]["base_url"] == "http://b.test"
    assert fixed[0][1]["base_url"] == fixed[2][1]["base_url"] != "http://b.test"
    assert all(s["http_cache"] is True for _, s in fixed)
    assert all(runtime.ledger.state(job.job_id) == "running" for job in shards)
