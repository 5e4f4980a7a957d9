"""Schedules: data in, one beat entry each; a real beat launches chains on real workers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from chains.runtime.registry import declared_schedules
from chains.runtime.schedule import LAUNCH_TASK, Schedule, beat_schedule
from sandbox.cluster import ROOT, running_cluster
from sandbox.world import World


def test_each_schedule_becomes_one_beat_entry_that_launches_its_chain() -> None:
    entries = beat_schedule([Schedule(chain="demo", every_s=60, params={"page": 1})])
    [entry] = entries.values()
    assert entry["task"] == LAUNCH_TASK and entry["args"] == ["demo", {"page": 1}]
    assert entry["schedule"].total_seconds() == 60


def test_a_refill_schedule_launches_only_when_its_pool_is_low() -> None:
    entries = beat_schedule([Schedule(chain="demo-login", every_s=300, when_low="cookie:demo")])
    [entry] = entries.values()
    assert entry["args"] == ["demo-login", {}] and entry["kwargs"] == {"when_low": "cookie:demo"}
    with pytest.raises(ValidationError, match="when_low"):
        Schedule(chain="demo-login", every_s=300, when_low="cookies")


def test_the_environment_replaces_declared_schedules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAIN_SCHEDULES", '[{"chain": "demo", "every_s": 5}]')
    assert declared_schedules() == [Schedule(chain="demo", every_s=5)]
    monkeypatch.setenv("CHAIN_SCHEDULES", '[{"chain": "demo", "every_s": -1}]')
    with pytest.raises(ValidationError, match="every_s"):
        declared_schedules()


@pytest.mark.integration
def test_beat_launches_the_chain_again_and_recrawl_skips_what_is_fresh(tmp_path: Path) -> None:
    schedule = json.dumps([{"chain": "demo", "every_s": 3, "params": {"page": 1}}])
    with running_cluster(tmp_path, World(seed=3),
                         extra_env={"CHAIN_SCHEDULES": schedule}) as cluster:
        env = cluster.env
        launcher = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "worker", "worker", "-Q", "crawlchain",
             "--concurrency", "1", "--hostname", "launcher@%h", "--without-mingle",
             "--without-gossip"], cwd=ROOT, env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        beat = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "worker", "beat", "--schedule",
             str(tmp_path / "beat-schedule")], cwd=ROOT, env=env, start_new_session=True,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ledger = cluster.runtime.ledger
            cluster.wait_for(lambda: len(ledger.job_ids()) >= 2, 60, "two scheduled jobs")
            first, second = reversed(ledger.job_ids()[-2:])
            for job_id in (first, second):
                cluster.wait_for(lambda j=job_id: ledger.state(j) == "finished", 60, "a job")
            one, two = ledger.counts(first), ledger.counts(second)
        finally:
            for proc in (beat, launcher):
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
    assert one["detail"]["done"] == World(seed=3).expected()["detail"]["units"]
    assert two["feed"]["done"] == one["feed"]["done"]  # volatile: fetched every time
    assert two["user_info"]["skipped"] == one["user_info"]["done"]  # fresh: skipped
