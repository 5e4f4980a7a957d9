"""The deep-chain benchmark runs end to end on the small forum (one round, crawlchain
and the plain peer, then crawlchain's profiled crawl) and prints its JSON last, both
crawlers holding exactly the forum's expected records, the profile accounting for the
workers' CPU phase by phase.

Needs redis-server (the embedded broker) and nothing else: the plain peer's venv is
empty (standard library) and is made on first use. Slow: two private clusters, ~20 s.
"""

from __future__ import annotations

import json

import pytest

from bench import chain
from sandbox.forum.expected import expected
from sandbox.forum.world import SHAPES, ForumWorld

pytestmark = pytest.mark.slow

TRUTH = expected(ForumWorld.build(7, SHAPES["small"]))
FIGURES = {"pages_per_s", "pages_per_cpu_s", "items", "peak_rss_mb"}
REDIS = {"redis_commands_per_unit", "redis_round_trips_per_unit",
         "redis_cpu_ms_per_1000_units", "broker_messages_per_unit"}
RATIOS = {"pages_per_cpu_s_vs_scrapy", "pages_per_cpu_s_vs_crawlee", "pages_per_s_vs_scrapy",
          "pages_per_s_vs_crawlee", "pages_per_cpu_s_vs_plain"}


def test_small_forum_one_round_crawlchain_and_the_plain_peer_hold_the_same_records(
        capsys: pytest.CaptureFixture[str]) -> None:
    code = chain.main(["--shape", "small", "--runs", "1", "--crawler", "project",
                       "--crawler", "plain", "--quiet-wait", "0", "--profile", "--json"])
    result = json.loads(capsys.readouterr().out.splitlines()[-1])

    assert code == 0, result["items_check"]
    for crawler in ("project", "scrapy", "crawlee", "plain"):
        assert result[crawler].keys() >= FIGURES
    for crawler in ("project", "plain"):
        assert all(result[crawler][k] > 0 for k in FIGURES)
        assert result[crawler]["items"] == TRUTH.items == 2148
    assert all(v is None for k, v in result["scrapy"].items() if k in FIGURES)
    assert result["project"].keys() >= REDIS
    assert all(result["project"][k] > 0 for k in REDIS)
    # a unit's Redis work: more commands than round trips (scripts, pipelines batch them)
    assert result["project"]["redis_commands_per_unit"] > \
        result["project"]["redis_round_trips_per_unit"]
    assert result["ratios"].keys() >= RATIOS
    assert result["ratios"]["pages_per_cpu_s_vs_plain"] > 0
    assert result["ratios"]["pages_per_cpu_s_vs_scrapy"] is None
    check = result["items_check"]
    assert check["same_counts"] and check["problems"] == {}
    assert check["counts"] == {"project": [TRUTH.counts()], "plain": [TRUTH.counts()]}
    assert {r["pages"] for r in result["runs"]} == {TRUTH.requests}
    profile = result["profile"]
    assert profile["problems"] == [] and profile["pages"] == TRUTH.requests
    phases = {"fetch", "parse", "validation", "storage", "ledger", "publish",
              "message/broker (consumer)", "message/broker (pool child)"}
    assert phases <= {p for p, row in profile["by_phase"].items() if row["ms_per_page"] > 0}
    assert 0.7 < profile["coverage"] < 1.3  # the phases add up to the workers' CPU
