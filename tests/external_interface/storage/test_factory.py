"""``STORAGE_URL`` picks the backend; a URL it cannot read is refused without its password."""

from __future__ import annotations

from pathlib import Path

import pytest

from external_interface.storage.factory import store_from_url
from external_interface.storage.sqlite import SQLiteStore


def test_an_unknown_scheme_is_named_and_the_password_is_not() -> None:
    with pytest.raises(ValueError, match=r"unknown scheme 'postgres\+psycopg'") as refused:
        store_from_url("postgres+psycopg://crawl:hunter2@db.lan:5432/items")
    assert "postgres+psycopg://crawl:***@db.lan:5432/items" in str(refused.value)
    assert "hunter2" not in str(refused.value)


def test_a_sqlite_url_builds_the_sqlite_store(tmp_path: Path) -> None:
    store = store_from_url(f"sqlite:///{tmp_path}/items.db")
    assert isinstance(store, SQLiteStore)
    store.close()
