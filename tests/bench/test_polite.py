"""``bench polite`` on a small shop: the defended crawl is exact and its figures are read."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import polite
from sandbox.polite.catalogue import Shape, chain_requests

pytestmark = pytest.mark.integration
SMALL = Shape(categories=2, items_per_category=30)


def test_the_polite_chain_gets_through_the_defences_exactly(tmp_path: Path) -> None:
    served = polite.serve(defences=True, shape=SMALL)
    try:
        run = polite.crawl_once(tmp_path, served.url, True, 120, shape=SMALL)
        statuses = served.statuses()
    finally:
        served.stop()
    assert run["exact"] and run["failed"] == 0
    assert statuses[200] == chain_requests(shape=SMALL)  # every page once, none refused 403
    assert 403 not in statuses and statuses.get(503, 0) == run["retried"] - statuses.get(429, 0)
