"""The close phase's own rules: retry backoff."""

from __future__ import annotations

import pytest

from chains.runtime.pipeline.close import backoff_s


@pytest.mark.parametrize("base", [0.2, 1.0, 1.5])
def test_backoff_grows_with_retries_is_jittered_and_capped_for_any_base(base: float) -> None:
    for retries in range(8):
        delays = [backoff_s(base, retries, 5.0) for _ in range(200)]
        assert all(0.0 <= d <= min(5.0, base * 2 ** retries) for d in delays)
        assert len(set(delays)) > 100  # jittered, not one value
