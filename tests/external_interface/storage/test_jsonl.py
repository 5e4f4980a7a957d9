"""The JSON lines store beyond the contract: torn lines, concurrent appends, bad names."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import pytest

from exceptions import StorageUnavailable
from external_interface.storage.jsonl import JsonlStore
from tests.external_interface.storage.support import posts


def test_every_write_is_a_line_and_reads_fold_them_by_key(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    store.upsert("job-1", posts(1, 2))
    store.upsert("job-2", posts(2))
    assert len((tmp_path / "posts.jsonl").read_bytes().splitlines()) == 3
    assert store.count("posts") == 2


def test_a_line_torn_by_a_crash_is_skipped_and_fenced_off(tmp_path: Path) -> None:
    store = JsonlStore(tmp_path)
    store.upsert("job-1", posts(1))
    with (tmp_path / "posts.jsonl").open("ab") as file:  # a crash halfway through a line
        file.write(b'{"key":"demo|2","data":{"si')
    store.upsert("job-1", posts(3))
    assert [r["key"] for r in store.read("posts")] == ["demo|1", "demo|3"]


def _append_many(directory: str, worker: int) -> None:
    store = JsonlStore(Path(directory))
    for batch in range(50):
        start = worker * 10_000 + batch * 20
        store.upsert(f"job-{worker}", posts(*range(start, start + 20), title="x" * 300))


def test_concurrent_appends_from_processes_never_interleave(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_append_many, args=(str(tmp_path), n)) for n in range(4)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=60)
        assert process.exitcode == 0
    lines = (tmp_path / "posts.jsonl").read_bytes().splitlines()
    assert len(lines) == 4 * 50 * 20
    assert all(json.loads(line)["key"] for line in lines)
    assert JsonlStore(tmp_path).count("posts") == 4000


def test_a_directory_that_cannot_be_written_raises_storage_unavailable(tmp_path: Path) -> None:
    (tmp_path / "blocked").write_text("a file where the directory should be")
    store = JsonlStore(tmp_path / "blocked" / "items")
    with pytest.raises(StorageUnavailable):
        store.upsert("job-1", posts(1))


@pytest.mark.parametrize("name", ["../escape", "a/b", ".hidden", ""])
def test_a_collection_name_must_be_a_plain_file_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="plain file name"):
        JsonlStore(tmp_path).count(name)


def test_the_url_names_a_relative_or_an_absolute_directory() -> None:
    assert JsonlStore.from_url("jsonl:///data/items").directory == Path("data/items")
    assert JsonlStore.from_url("jsonl:////srv/items").directory == Path("/srv/items")


def test_a_wrong_storage_url_is_named_with_its_password_masked() -> None:
    with pytest.raises(ValueError, match="STORAGE_URL") as caught:
        JsonlStore.from_url("jsonl://app:hunter2@files.internal/items")
    assert "hunter2" not in str(caught.value) and "app:***@" in str(caught.value)
