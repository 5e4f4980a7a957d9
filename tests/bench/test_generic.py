"""``bench generic``'s own side on the small site: the project's page set is the expected one."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import generic

pytestmark = pytest.mark.integration


def test_the_project_crawls_exactly_the_expected_pages_and_reports_its_figures(
        tmp_path: Path) -> None:
    result = generic.crawl_project(tmp_path, "small", 3, 120)
    assert generic.same(result), result["comparison"]
    assert result["pages"] == result["comparison"]["expected"] and result["failed"] == 0
    assert result["wall_s"] > 0 and result["cpu_s"] > 0
