"""The fault-injection harness on real clusters: whatever is killed, nothing is lost or doubled.

The fast subset (one run of the three quickest scenarios, under a minute) runs in
the default suite; every scenario five times is the slow suite (about ten minutes).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench import faults
from bench.fault_scenarios import SCENARIOS

pytestmark = pytest.mark.integration


def rows_of(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    faults.main(["--json", "--seed", "7", *argv])
    return list(json.loads(capsys.readouterr().out.splitlines()[-1])["rows"])


def assert_nothing_lost_or_doubled(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        assert (row["lost"], row["duplicate_items"]) == (0, 0), row


def test_quick_faults_lose_and_double_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    rows = rows_of(capsys, ["--quick"])
    assert [r["scenario"] for r in rows] == faults.QUICK and len(rows) == 3
    assert all(r["runs"] == 1 for r in rows)
    assert_nothing_lost_or_doubled(rows)


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_every_fault_five_times_loses_and_doubles_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    names = [s.name for s in SCENARIOS]
    rows = rows_of(capsys, ["--runs", "5", "--only", *names])
    assert [r["scenario"] for r in rows] == names
    assert all(r["runs"] == 5 for r in rows)
    assert_nothing_lost_or_doubled(rows)
