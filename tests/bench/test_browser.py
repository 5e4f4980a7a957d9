"""``bench browser`` in small: crawlchain's runs on the JavaScript shop are exact and read
their figures; the memory run marks its quarters. (The peers' venvs are built by the
bench itself, minutes of downloads: not here.)"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import browser
from tests.external_interface.clients.browser_support import need_chromium

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def test_the_project_runs_are_exact_and_auto_renders_the_lists_only(tmp_path: Path) -> None:
    need_chromium()
    shop = browser.serve(12)
    try:
        rendered = browser.run_project(shop, tmp_path / "browser", 4, "browser", 180)
        auto = browser.run_project(shop, tmp_path / "auto", 4, None, 180)
    finally:
        shop.stop()
    assert rendered["exact"] and rendered["pages"] == rendered["browser_pages"] == 16
    assert rendered["pages_per_s"] > 0 and rendered["peak_rss_mb"] > rendered["peak_pss_mb"] > 0
    assert auto["exact"] and auto["browser_pages"] == 4 and auto["http_pages"] == 12


def test_the_memory_run_marks_each_quarter() -> None:
    need_chromium()
    result = browser.memory(16, 4)
    assert [mark["page"] for mark in result["marks"]] == [4, 8, 12, 16]
    assert result["drift_rss"] > 0 and result["drift_pss"] > 0
