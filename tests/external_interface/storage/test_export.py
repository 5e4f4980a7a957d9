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
    assert main(["posts", "--storage-url", url, "--out", str(out), "--envelope", *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_jsonl_export_is_the_items_themselves_by_default(jsonl_url: str, tmp_path: Path) -> None:
    out = tmp_path / "posts.jsonl"
    assert main(["posts", "--storage-url", jsonl_url, "--out", str(out)]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert records[1] == {"site": "demo", "post_id": 2, "title": "second 2", "tags": []}


def test_jsonl_export_with_envelope_has_one_line_per_key_with_the_latest_data(
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


def _sqlite_url(tmp_path: Path) -> str:
    """Posts of two jobs with every kind of value a field can hold, and one comment."""
    store = SQLiteStore(tmp_path / "items.db")
    store.upsert("job-1", [Post(site="demo", post_id=i, title=f"t{i}", tags=["x"] * i)
                           for i in range(1, 4)])
    store.upsert("job-2", [Comment(comment_id="c1", text="hi")])
    store.close()
    return f"sqlite:///{tmp_path / 'items.db'}"


def test_json_export_is_one_array_of_the_jsonl_records(jsonl_url: str, tmp_path: Path) -> None:
    out = tmp_path / "posts.json"
    main(["posts", "--format", "json", "--storage-url", jsonl_url, "--out", str(out),
          "--envelope"])
    assert json.loads(out.read_text()) == _jsonl_export(jsonl_url, tmp_path)


def test_an_empty_json_export_is_an_empty_array(jsonl_url: str, tmp_path: Path) -> None:
    out = tmp_path / "none.json"
    main(["posts", "--format", "json", "--job", "job-9", "--storage-url", jsonl_url,
          "--out", str(out)])
    assert json.loads(out.read_text()) == []


def test_parquet_export_reads_back_with_typed_columns(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (parquet extra)")
    out = tmp_path / "posts.parquet"
    assert main(["posts", "--format", "parquet", "--storage-url", _sqlite_url(tmp_path),
                 "--out", str(out)]) == 0
    table = pq.read_table(out)
    assert table.column_names == ["_key", "_job_id", "_first_seen", "_last_seen", "site",
                                  "post_id", "title", "tags"]
    assert str(table.schema.field("post_id").type) == "int64"
    assert str(table.schema.field("_first_seen").type) == "timestamp[us, tz=UTC]"
    rows = table.to_pylist()
    assert [r["_key"] for r in rows] == ["demo|1", "demo|2", "demo|3"]
    assert rows[1]["tags"] == '["x", "x"]' and rows[1]["post_id"] == 2


def test_a_jobs_parquet_export_names_each_records_collection(tmp_path: Path) -> None:
    pq = pytest.importorskip("pyarrow.parquet", reason="pyarrow not installed (parquet extra)")
    out = tmp_path / "job.parquet"
    main(["job-2", "--format", "parquet", "--storage-url", _sqlite_url(tmp_path), "--out",
          str(out)])
    assert pq.read_table(out).to_pylist()[0] | {"_first_seen": 0, "_last_seen": 0} == {
        "_collection": "comments", "_key": "c1", "_job_id": "job-2", "_first_seen": 0,
        "_last_seen": 0, "comment_id": "c1", "text": "hi"}


def test_fields_keeps_those_item_fields_in_that_order(tmp_path: Path) -> None:
    url = _sqlite_url(tmp_path)
    out = tmp_path / "posts.csv"
    main(["posts", "--format", "csv", "--fields", "title,post_id", "--storage-url", url,
          "--out", str(out)])
    with out.open(newline="") as file:
        rows = list(csv.DictReader(file))
    assert list(rows[0]) == ["_key", "_job_id", "_first_seen", "_last_seen", "title", "post_id"]
    assert [(r["title"], r["post_id"]) for r in rows] == [("t1", "1"), ("t2", "2"), ("t3", "3")]
    main(["posts", "--fields", "title", "--storage-url", url, "--out", str(out)])
    assert next(json.loads(line) for line in out.read_text().splitlines()) == {"title": "t1"}


def test_since_keeps_the_records_last_seen_from_then_on(tmp_path: Path) -> None:
    store = SQLiteStore(tmp_path / "items.db")
    store.upsert("job-1", posts(1, 2))
    store.close()
    url = f"sqlite:///{tmp_path / 'items.db'}"
    out = tmp_path / "posts.jsonl"
    main(["posts", "--since", "2000-01-01", "--storage-url", url, "--out", str(out)])
    assert len(out.read_text().splitlines()) == 2
    main(["posts", "--since", "2999-01-01T00:00:00+00:00", "--storage-url", url, "--out",
          str(out)])
    assert out.read_text() == ""


def test_a_bad_since_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["posts", "--since", "last tuesday", "--storage-url", "sqlite:///x.db"])
    assert "expected epoch seconds or ISO 8601" in capsys.readouterr().err


def test_parquet_without_pyarrow_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ImportError, match=r"pip install 'crawlchain\[parquet\]'"):
        main(["posts", "--format", "parquet", "--out", str(tmp_path / "p.parquet"),
              "--storage-url", _sqlite_url(tmp_path)])


def test_a_postgresql_store_exports_as_the_others_do(tmp_path: Path) -> None:
    from tests.external_interface.storage.postgres_support import postgres_store

    with postgres_store() as store:
        store.upsert("job-1", posts(1, 2, 3))
        store.upsert("job-2", posts(3, title="again"))
        url = f"{store.dsn}&schema={store.schema}"
        out = tmp_path / "posts.csv"
        main(["posts", "--format", "csv", "--fields", "post_id,title", "--job", "job-1",
              "--storage-url", url, "--out", str(out)])
        rows = list(csv.DictReader(out.open(newline="")))
        assert [(r["_key"], r["title"]) for r in rows] == [("demo|1", "hello 1"),
                                                           ("demo|2", "hello 2")]
        assert main(["job-2", "--storage-url", url, "--out", str(out)]) == 0
        [record] = [json.loads(line) for line in out.read_text().splitlines()]
        assert (record["_collection"], record["title"]) == ("posts", "again 3")
