"""``bench generic``'s own side on the small site: the cold crawl and the warm one both store
exactly the expected pages; wget mirrors the same server; ``--busy`` spins one core."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import psutil
import pytest

from bench import generic

pytestmark = pytest.mark.integration


def test_the_cold_and_the_warm_crawl_store_exactly_the_expected_pages(tmp_path: Path) -> None:
    cold, warm = generic.crawl_project(tmp_path, "small", 3, 120)
    for result in (cold, warm):
        assert generic.same(result), result["comparison"]
        assert result["pages"] == result["comparison"]["expected"] and result["failed"] == 0
        assert result["wall_s"] > 0 and result["cpu_s"] > 0
    assert warm["server_requests"] > 0  # the second job fetched again: its own requests


@pytest.mark.skipif(shutil.which("wget") is None, reason="wget is not installed")
def test_wget_mirrors_the_site_to_the_depth(tmp_path: Path) -> None:
    result = generic.crawl_wget("small", 3, 60, tmp_path)
    # robots.txt obeyed, no sitemap read: the linked pages, not the sitemap's orphans
    assert 0 < result["pages"] <= result["server_requests"] and result["wall_s"] > 0


def test_busy_core_spins_one_process_only_while_asked() -> None:
    before = {p.pid for p in psutil.Process().children()}
    with generic.busy_core(True, 30):
        spinning = [p for p in psutil.Process().children() if p.pid not in before]
        assert len(spinning) == 1
        deadline = time.monotonic() + 10
        while sum(spinning[0].cpu_times()[:2]) < 0.05 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sum(spinning[0].cpu_times()[:2]) >= 0.05  # it spins (however loaded the box)
    assert not spinning[0].is_running() or spinning[0].status() == psutil.STATUS_ZOMBIE
    with generic.busy_core(False, 30):
        assert {p.pid for p in psutil.Process().children()} == before
