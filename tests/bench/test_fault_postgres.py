"""The fault harness on a PostgreSQL item store (issue 21): the database away for seconds,
and a pool child killed while its write waits, lose and double nothing.

The slow test runs each scenario once (about 15 s in all); where no PostgreSQL answers,
the rows are skipped and say why, and so does ``unavailable``.
"""

from __future__ import annotations

import json
import socket
from typing import Any

import pytest

from bench import fault_postgres, faults

SCENARIOS = ["postgres_down", "postgres_kill_during_write"]


def rows_of(capsys: pytest.CaptureFixture[str], argv: list[str]) -> list[dict[str, Any]]:
    faults.main(["--json", "--seed", "7", *argv])
    rows: list[dict[str, Any]] = json.loads(capsys.readouterr().out.splitlines()[-1])["rows"]
    return rows


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def test_without_a_server_the_scenarios_are_skipped_saying_why(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTGRES_DSN", f"postgresql://postgres@127.0.0.1:{closed_port()}/test")
    rows = rows_of(capsys, ["--runs", "1", "--only", *SCENARIOS])
    assert [(r["outcome"], r["runs"]) for r in rows] == [("skipped", 0)] * 2
    for row in rows:
        assert row["skipped"].startswith("no PostgreSQL at 127.0.0.1:"), row
        assert "set POSTGRES_DSN" in row["skipped"]


def test_a_run_stores_into_a_database_of_its_own_on_the_dsn_server(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("POSTGRES_DSN", "postgresql://u:pw@db.example:5433/test?sslmode=off")
    assert fault_postgres.database_url("crawlchain_fault_x") == \
        "postgresql://u:pw@db.example:5433/crawlchain_fault_x?sslmode=off"


@pytest.mark.integration
@pytest.mark.slow
@pytest.mark.timeout(300)
def test_postgres_faults_once_lose_and_double_nothing(
        capsys: pytest.CaptureFixture[str]) -> None:
    expected = "skipped" if fault_postgres.unavailable() else "ok"
    rows = rows_of(capsys, ["--runs", "1", "--only", *SCENARIOS])
    assert [r["scenario"] for r in rows] == SCENARIOS
    for row in rows:
        assert (row["lost"], row["duplicate_items"], row["outcome"]) == (0, 0, expected), row
