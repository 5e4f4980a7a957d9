"""The fault-injection harness on real clusters: whatever is killed, nothing is lost or doubled,
and a run that loses something says what, when, and how to run it again.

The fast subset (one run of the three quickest scenarios, under a minute) runs in the
default suite. The slow suite runs each scenario added for issue 22 once, and one
scenario over an item store that drops an item (a real HTTP sink on loopback, broken on
purpose): the harness must fail that row, name the item and the seed, and ``--replay``
must fail the same way. The whole catalogue five times is ``./control.sh faults``, not a
test: it takes about fifteen minutes.
"""

from __future__ import annotations

import json
import shutil
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench import faults
from bench.fault_scenarios import SCENARIOS
from sandbox.world import expected_keys
from tests.external_interface.storage.support import Sink, SinkHTTPServer

pytestmark = pytest.mark.integration

ADDED = ["worker_cold_shutdown", "worker_second_sigterm", "worker_host_lost", "launched_twice",
         "dedup_store_lost", "memory_recycling", "broker_half_open", "rabbitmq_sigkill_restart"]


def output(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict[str, Any]:
    faults.main(["--json", "--seed", "7", *argv])
    found: dict[str, Any] = json.loads(capsys.readouterr().out.splitlines()[-1])
    return found


def rows_of(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    return list(output(capsys, argv)["rows"])


def assert_nothing_lost_or_doubled(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert (row["lost"], row["duplicate_items"], row["outcome"]) in (
            (0, 0, "ok"), (0, 0, "skipped")), row


def test_quick_faults_lose_and_double_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    rows = rows_of(capsys, ["--quick"])
    assert [r["scenario"] for r in rows] == faults.QUICK and len(rows) == 3
    assert all(r["runs"] == 1 for r in rows)
    assert_nothing_lost_or_doubled(rows)


def test_the_catalogue_has_every_way_a_cluster_breaks() -> None:
    names = [s.name for s in SCENARIOS]
    assert len(names) == len(set(names)) >= 18
    assert set(ADDED) <= set(names)


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_each_added_fault_once_loses_and_doubles_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = rows_of(capsys, ["--runs", "1", "--only", *ADDED])
    assert [r["scenario"] for r in rows] == ADDED
    assert all(r["runs"] == 1 or r["outcome"] == "skipped" for r in rows)
    assert_nothing_lost_or_doubled(rows)


# -- the suite can fail -------------------------------------------------------------------
KEPT = "logs kept in "
VICTIM = sorted(expected_keys(faults.WORLD)["users"])[0]


class DroppingSink(Sink):
    """A sink that answers 200 for every batch but never stores one item: a defect of the
    kind a storage backend can have (a batch written but for one row)."""

    def _store(self, entry: dict[str, Any]) -> None:
        if (entry["collection"], entry["key"]) != ("users", VICTIM):
            super()._store(entry)


@pytest.fixture
def dropping_sink() -> Iterator[str]:
    server = SinkHTTPServer()
    server.sink = DroppingSink()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.url
    server.shutdown()
    server.server_close()


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_store_dropping_an_item_fails_the_row_naming_the_item_and_a_replayable_seed(
        capsys: pytest.CaptureFixture[str], dropping_sink: str) -> None:
    broken = ["--set", f"STORAGE_URL={dropping_sink}", "--only", "pool_child_sigkill"]
    first = output(capsys, [*broken, "--runs", "1"])
    [row] = first["rows"]
    assert (row["outcome"], row["lost"]) == ("FAIL", 1)
    [failure] = row["failures"]
    assert failure["seed"] == "7.0" and failure["moment"].endswith("of units")
    [lost] = failure["lost_items"]
    assert lost.startswith(f"users/{VICTIM} <- user_info {{'user_id': '{VICTIM}'}} unit ")
    report = json.loads(Path(first["report"]).read_text())
    assert report["runs"]["pool_child_sigkill"][0]["lost_items"] == [lost]

    again = output(capsys, [*broken, "--replay", failure["seed"]])
    [replayed] = again["rows"]
    assert replayed["outcome"] == "FAIL"
    assert [(f["seed"], f["lost_items"]) for f in replayed["failures"]] == [("7.0", [lost])]
    for run in (failure, *replayed["failures"]):  # failing runs keep their logs: not these
        for note in run["notes"]:
            if note.startswith(KEPT):
                shutil.rmtree(note.removeprefix(KEPT), ignore_errors=True)


@pytest.mark.slow
@pytest.mark.timeout(300)
def test_a_job_that_does_not_finish_says_where_it_stands(
        capsys: pytest.CaptureFixture[str]) -> None:
    [row] = rows_of(capsys, ["--only", "worker_cold_shutdown", "--runs", "1",
                             "--drain-timeout", "0.2"])
    [failure] = row["failures"]
    [stall] = [p for p in failure["problems"] if p.startswith("the job did not finish: ")]
    where = json.loads(stall.removeprefix("the job did not finish: "))
    assert sum(where["open"].values()) > 0 and where["sample"][0]["id"]
    assert "demo" in where["limiter"] and "leases_held" in where["limiter"]["demo"]
    assert "r" in where["throttle"]["demo"] and where["unacked"] >= 0
    for note in failure["notes"]:
        if note.startswith(KEPT):
            shutil.rmtree(note.removeprefix(KEPT), ignore_errors=True)
