"""The API export benchmark runs end to end on a small count and prints its JSON last."""

from __future__ import annotations

import json

import pytest

from bench import api_export

pytestmark = pytest.mark.slow  # two API servers started as processes: a few seconds


def test_every_item_comes_over_http_and_the_servers_peak_memory_is_reported(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert api_export.main(["--items", "5000", "--json"]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])
    assert result["exports"]["jsonl"]["lines"] == 5000
    assert result["exports"]["csv"]["lines"] == 5001  # the header
    for figures in result["exports"].values():
        assert 0 < figures["peak_rss_mb"] < result["rss_limit_mb"] and figures["mb"] > 0
