"""The crawl benchmark runs end to end (``--quick``) and prints its JSON last.

Needs nginx (``apt-get install -y nginx``) and the Scrapy peer's venv, which
``python -m bench.crawl`` creates on first use; without them the test skips and
says which one is missing. Slow: a private cluster per run, about a minute.
"""

from __future__ import annotations

import json

import pytest

from bench import crawl, crawl_scrapy
from bench.properties import servers

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _needs_nginx_and_the_scrapy_venv() -> None:
    if servers.nginx_binary() is None:
        pytest.skip("nginx is not installed (apt-get install -y nginx; the bench installs it)")
    if crawl_scrapy.scrapy_binary() is None:
        pytest.skip(f"no Scrapy peer venv at {crawl_scrapy.venv_dir()} "
                    "(python -m bench.crawl --quick creates it)")


def test_quick_bench_measures_both_crawlers_on_the_same_items(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert crawl.main(["--quick", "--json", "--quiet-wait", "0"]) == 0
    result = json.loads(capsys.readouterr().out.splitlines()[-1])

    figures = {"pages_per_cpu_s", "pages_per_s", "latency_efficiency_c16",
               "latency_efficiency_c64", "latency_bound_c16", "latency_bound_c64",
               "latency_vs_bound_c16", "latency_vs_bound_c64", "peak_rss_mb"}
    for crawler in ("project", "scrapy"):
        assert figures == result[crawler].keys()
        assert all(isinstance(v, float) and v > 0 for v in result[crawler].values())
    assert result["ratios"].keys() == {"pages_per_cpu_s", "pages_per_s"}
    assert {"target_per_s", "measured_per_s"} <= result["rate_limit"].keys()
    assert result["items_check"] == {"project_items": 600, "scrapy_items": 600,
                                     "only_one_side": 0, "field_mismatches": 0}
    throughput = [r for r in result["runs"] if r["test"] == "throughput"]
    assert {r["pages"] for r in throughput} == {620}  # 600 details + 20 index pages
    latency = [r for r in result["runs"] if r["test"].startswith("latency")]
    assert {r["pages"] for r in latency} == {100}  # every index page of the 3,000 site, once
    # 100 pages in waves of 16 take 7 waves (112 slots); in waves of 64, two (128)
    assert result["project"]["latency_bound_c16"] == round(100 / 112, 4)
    assert result["project"]["latency_bound_c64"] == round(100 / 128, 4)
