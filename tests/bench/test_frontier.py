"""``bench frontier`` on a small frontier: the pending units' memory is split into broker
and state, and the job then runs to an exact finish (real redis-server and worker)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import frontier

pytestmark = pytest.mark.integration


def test_a_small_frontier_is_measured_pending_and_then_finishes_exact(tmp_path: Path) -> None:
    result = frontier.measure(1200, timeout=240, workdir=tmp_path)
    assert result["exact"] and result["done"] == result["stored"] == 1200, result
    cost = result["bytes_per_pending_unit"]
    assert cost["broker"] > 0 and cost["state"] > 0, cost
    assert cost["total"] == pytest.approx(cost["broker"] + cost["state"], abs=0.2)
    assert result["launch_s"] > 0 and result["peak_rss_mb"]["worker"] > 0
