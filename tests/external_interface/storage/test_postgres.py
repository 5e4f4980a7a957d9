"""The PostgreSQL store beyond the contract: an optional driver, a server away, races,
the table layout and durable commits.

The contract itself runs in ``test_contract.py``; these run wherever ``POSTGRES_DSN`` (or
the local server) answers, each on a schema of its own.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest

from exceptions import StorageUnavailable, UserError
from external_interface.storage.factory import store_from_url
from external_interface.storage.postgres import PostgresStore
from tests.external_interface.storage.postgres_support import DSN, postgres_store
from tests.external_interface.storage.support import Comment, posts


def test_importing_the_module_does_not_import_psycopg() -> None:
    code = ("import sys, external_interface.storage.postgres; "
            "assert 'psycopg' not in sys.modules, 'psycopg imported at import time'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_missing_psycopg_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)
    with pytest.raises(UserError, match=r"pip install 'crawlchain\[postgres\]'"):
        store_from_url("postgresql://127.0.0.1/test")


def test_the_url_names_the_schema_and_a_short_connect_timeout_is_added() -> None:
    pytest.importorskip("psycopg", reason="psycopg not installed (the postgres extra)")
    store = PostgresStore.from_url("postgres://u@127.0.0.1:5432/db?schema=site_a")
    assert store.schema == "site_a"
    assert store.dsn == "postgres://u@127.0.0.1:5432/db?connect_timeout=5"
    assert PostgresStore.from_url("postgresql://h/db").schema == "crawlchain"
    with pytest.raises(ValueError, match="schema name 'a b' is not a plain name"):
        PostgresStore.from_url("postgresql://h/db?schema=a b")


def test_an_unreachable_server_raises_storage_unavailable_without_the_password() -> None:
    pytest.importorskip("psycopg", reason="psycopg not installed (the postgres extra)")
    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = PostgresStore.from_url(f"postgresql://crawl:s3cret@127.0.0.1:{port}/test")
    with pytest.raises(StorageUnavailable, match=f"127.0.0.1:{port}/test") as raised:
        store.upsert("job-1", posts(1))
    assert "s3cret" not in str(raised.value)
    with pytest.raises(StorageUnavailable):
        list(store.read("posts"))


def test_a_connection_cut_by_the_server_is_unavailable_once_then_the_store_reconnects() -> None:
    with postgres_store() as store:
        store.upsert("job-1", posts(1))
        conn = store._connection()
        pid = conn.info.backend_pid
        import psycopg

        with psycopg.connect(DSN, autocommit=True) as admin:  # as a server restart would
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(StorageUnavailable, match="postgresql"):
            store.upsert("job-1", posts(2))
        assert store.upsert("job-1", posts(2)) == 1  # the worker's retry lands
        assert store.count("posts") == 2


def test_each_collection_is_a_table_of_key_jsonb_job_id_and_times() -> None:
    with postgres_store() as store:
        store.upsert("job-1", [*posts(1), Comment(comment_id="c1", text="hi")])
        conn = store._connection()
        columns = conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = %s AND table_name = 'posts' ORDER BY ordinal_position",
            (store.schema,)).fetchall()
        assert columns == [("key", "text"), ("data", "jsonb"), ("job_id", "text"),
                           ("first_seen", "timestamp with time zone"),
                           ("last_seen", "timestamp with time zone")]
        assert store.collections() == ["comments", "posts"]
        row = conn.execute(f'SELECT data->>\'title\' FROM "{store.schema}".posts').fetchone()
        assert row == ("hello 1",)


def test_commits_are_synchronous_even_where_the_server_default_is_not() -> None:
    pytest.importorskip("psycopg", reason="psycopg not installed (the postgres extra)")
    with postgres_store() as probe:
        relaxed = PostgresStore(probe.dsn + "&options=-c%20synchronous_commit%3Doff",
                                probe.schema)
        relaxed.upsert("job-1", posts(1))
        setting = relaxed._connection().execute("SHOW synchronous_commit").fetchone()
        assert setting == ("on",)
        relaxed.close()


def test_concurrent_upserts_of_new_keys_and_tables_converge_on_one_row_each() -> None:
    with postgres_store() as first:
        stores = [first, *(PostgresStore(first.dsn, first.schema) for _ in range(3))]
        errors: list[BaseException] = []

        def write(store: PostgresStore, n: int) -> None:
            try:
                store.upsert(f"job-{n}", posts(*range(200)))
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=write, args=(s, n)) for n, s in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert first.count("posts") == 200
        for store in stores[1:]:
            store.close()
