"""The MongoDB store beyond the contract: an optional driver, an unreachable server, races.

The contract itself runs in ``test_contract.py`` wherever ``MONGO_URI`` is set.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import traceback
import uuid

import pytest

from exceptions import StorageUnavailable, UserError
from external_interface.storage.factory import store_from_url
from tests.external_interface.storage.support import posts


def test_importing_the_module_does_not_import_pymongo() -> None:
    code = (
        "import sys, external_interface.storage.mongo; "
        "assert 'pymongo' not in sys.modules, 'pymongo imported at import time'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_missing_pymongo_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pymongo", None)  # what an absent package looks like
    with pytest.raises(UserError, match=r"pip install 'crawlchain\[mongo\]'"):
        store_from_url("mongodb://127.0.0.1/crawlchain")


def test_an_unreachable_server_raises_storage_unavailable_quickly() -> None:
    pytest.importorskip("pymongo", reason="pymongo not installed (the mongo extra)")
    from external_interface.storage.mongo import MongoStore

    with socket.socket() as probe:  # a loopback port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = MongoStore.from_url(f"mongodb://127.0.0.1:{port}/t", server_selection_timeout_ms=200)
    started = time.monotonic()
    with pytest.raises(StorageUnavailable, match="ServerSelectionTimeoutError"):
        store.upsert("job-1", posts(1))
    assert time.monotonic() - started < 5
    store.close()


def test_an_unreachable_server_behind_a_password_never_shows_it() -> None:
    pytest.importorskip("pymongo", reason="pymongo not installed (the mongo extra)")
    from external_interface.storage.mongo import MongoStore

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    store = MongoStore.from_url(f"mongodb://crawler:hunter2@127.0.0.1:{port}/t?authSource=admin",
                                server_selection_timeout_ms=200)
    try:
        with pytest.raises(StorageUnavailable) as caught:
            store.upsert("job-1", posts(1))
    finally:
        store.close()
    shown = "".join(traceback.format_exception(caught.value)) + str(caught.value.url)
    assert "hunter2" not in shown and "ServerSelectionTimeoutError" in shown


def test_the_database_comes_from_the_url() -> None:
    pytest.importorskip("pymongo", reason="pymongo not installed (the mongo extra)")
    from external_interface.storage.mongo import MongoStore

    assert MongoStore.from_url("mongodb://127.0.0.1/site_a")._db.name == "site_a"
    assert MongoStore.from_url("mongodb://127.0.0.1")._db.name == "crawlchain"


def test_concurrent_upserts_of_new_keys_converge_on_one_document_each() -> None:
    uri = os.environ.get("MONGO_URI")
    if not uri:
        pytest.skip("MONGO_URI not set: no MongoDB server here")
    from external_interface.storage.mongo import MongoStore, import_pymongo

    client = import_pymongo().MongoClient(uri, tz_aware=True)
    database = f"crawlchain_test_{uuid.uuid4().hex[:12]}"
    stores = [MongoStore(client, database) for _ in range(4)]  # one per worker
    threads = [
        threading.Thread(target=s.upsert, args=(f"job-{n}", posts(*range(200))))
        for n, s in enumerate(stores)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    try:
        assert stores[0].count("posts") == 200
    finally:
        stores[0].drop_database()
        client.close()
