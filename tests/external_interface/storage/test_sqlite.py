"""The SQLite store shared by a worker's threads (the threads pool, a batch's unit threads)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from external_interface.storage.sqlite import SQLiteStore
from tests.external_interface.storage.support import posts


def test_one_store_takes_writes_and_reads_from_many_threads(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "items.db")

    def write(n: int) -> int:
        store.upsert(f"job-{n}", posts(*range(n * 10, n * 10 + 10)))
        return len(list(store.read("posts")))

    with ThreadPoolExecutor(8) as pool:
        assert all(seen >= 10 for seen in pool.map(write, range(40)))
    assert store.count("posts") == 400


@pytest.mark.parametrize("url", ["sqlite://app:hunter2@db.internal/items",
                                 "sqlite:///items.db?token=hunter2"])
def test_a_wrong_storage_url_is_named_with_its_secret_masked(url: str) -> None:
    with pytest.raises(ValueError, match="STORAGE_URL") as caught:
        SQLiteStore.from_url(url)
    assert "hunter2" not in str(caught.value)
