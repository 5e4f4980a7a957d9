"""Export: one line or row per key, filtered by job on request, written whole."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from external_interface.storage.export import main
from external_interface.storage.jsonl import JsonlStore
from external_interface.storage.sqlite import SQLiteStore
from tests.external_interface.storage.support import Comment, Post, posts

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def jsonl_url(tmp_path: Path) -> str:
    """A JSON lines store where keys were written several times by two jobs."""
    store = JsonlStore(tmp_path / "items")
    store.upsert("job-1", posts(1, 2, 3, title="first"))
    store.upsert("job-1", posts(1, 2, 3, title="first"))
    store.upsert("job-2", [*posts(2, title="second"), Post(site="demo", post_id=4, title="t")])
    return f"jsonl:///{tmp_path / 'items'}"


def _jsonl_export(url: str, tmp_path: Path, *extra: str) -> list[dict[str, object]]:
    out = tmp_path / "posts.jsonl"
    assert main(["posts", "--storage-url", url, "--out", str(out), *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_jsonl_export_has_one_line_per_key_with_the_latest_data(
    jsonl_url: str, tmp_path: Path
) -> None:
    records = _jsonl_export(jsonl_url, tmp_path)
    assert [r["key"] for r in records] == ["demo|1", "demo|2", "demo|3", "demo|4"]
    assert records[1]["data"] == {"site": "demo", "post_id": 2, "title": "second 2", "tags": []}
    assert records[1]["job_id"] == "job-2"


def test_a_job_filter_keeps_the_records_that_job_wrote_last(jsonl_url: str, tmp_path: Path) -> None:
    records = _jsonl_export(jsonl_url, tmp_path, "--job", "job-2")
    assert [r["key"] for r in records] == ["demo|2", "demo|4"]


def test_csv_export_has_meta_columns_then_item_fields(jsonl_url: str, tmp_path: Path) -> None:
    out = tmp_path / "posts.csv"
    main(["posts", "--format", "csv", "--storage-url", jsonl_url, "--out", str(out)])
    with out.open(newline="") as file:
        rows = list(csv.DictReader(file))
    meta = ["_key", "_job_id", "_first_seen", "_last_seen"]
    assert list(rows[0]) == [*meta, "site", "post_id", "title", "tags"]
    assert [row["_key"] for row in rows] == ["demo|1", "demo|2", "demo|3", "demo|4"]
    assert rows[0]["tags"] == "[]"
    assert rows[0]["_first_seen"].endswith("+00:00")


def test_a_failed_export_leaves_no_file(tmp_path: Path) -> None:
    out = tmp_path / "posts.jsonl"
    with pytest.raises(ValueError, match="plain file name"):
        main(["../posts", "--job", "j1", "--storage-url", f"jsonl:///{tmp_path}", "--out",
              str(out)])
    assert list(tmp_path.iterdir()) == []


def test_the_module_runs_on_the_configured_store_by_default(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "items.db")
    store.upsert("job-1", posts(1, 2))
    store.close()
    env = {**os.environ, "STORAGE_URL": f"sqlite:///{tmp_path / 'items.db'}"}
    command = [
        sys.executable,
        "-m",
        "external_interface.storage.export",
        "posts",
        "--format",
        "csv",
    ]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert len(done.stdout.splitlines()) == 3
    assert "exported 2 posts records to stdout" in done.stderr


def test_a_job_id_exports_that_jobs_records_of_every_collection(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "items.db")
    store.upsert("job-a", [*posts(1, 2), Comment(comment_id="c1", text="hi")])
    store.upsert("job-b", posts(3))
    out = tmp_path / "job.csv"
    assert main(["job-a", "--format", "csv", "--out", str(out),
                 "--storage-url", f"sqlite:///{tmp_path / 'items.db'}"]) == 0
    rows = list(csv.DictReader(out.open()))
    assert sorted((r["_collection"], r["_key"]) for r in rows) == [
        ("comments", "c1"), ("posts", "demo|1"), ("posts", "demo|2")]


def test_an_unknown_target_is_a_clear_error(tmp_path: Path) -> None:
    SQLiteStore(tmp_path / "items.db").upsert("job-a", posts(1))
    with pytest.raises(SystemExit, match="neither a collection nor a job"):
        main(["nope", "--storage-url", f"sqlite:///{tmp_path / 'items.db'}"])
