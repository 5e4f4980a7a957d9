"""The export benchmark runs end to end on a small count and prints its JSON last."""

from __future__ import annotations

import json

import pytest

from bench import export


def test_bench_exports_every_format_and_reads_the_parquet_rows_back(
        capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyarrow", reason="pyarrow not installed (parquet extra)")
    assert export.main(["--items", "25000", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert set(result["exports"]) == {"jsonl", "csv", "parquet"}
    assert result["parquet_rows"] == 25_000 and result["ok"] is True
    for figures in result["exports"].values():
        assert figures["peak_rss_mb"] > 0 and figures["mb"] > 0
