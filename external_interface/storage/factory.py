"""Which item store a ``STORAGE_URL`` names: the backend is imported only when chosen."""

from __future__ import annotations

from external_interface.storage import ItemStore
from utils.urls import redact_url


def store_from_url(url: str) -> ItemStore:
    """Build the backend named by the URL's scheme; drivers are imported only when chosen.

    ``sqlite:///path.db`` (default), ``jsonl:///directory``, ``http(s)://sink/endpoint``,
    ``mongodb://host/database`` (needs the ``mongo`` extra),
    ``postgresql://host/database?schema=crawlchain`` (needs the ``postgres`` extra).
    """
    scheme = url.split(":", 1)[0].lower()
    if scheme == "sqlite":
        from external_interface.storage.sqlite import SQLiteStore

        return SQLiteStore.from_url(url)
    if scheme == "jsonl":
        from external_interface.storage.jsonl import JsonlStore

        return JsonlStore.from_url(url)
    if scheme in ("http", "https"):
        from external_interface.storage.http_sink import HttpSinkStore

        return HttpSinkStore.from_url(url)
    if scheme in ("mongodb", "mongodb+srv"):
        from external_interface.storage.mongo import MongoStore

        return MongoStore.from_url(url)
    if scheme in ("postgresql", "postgres"):
        from external_interface.storage.postgres import PostgresStore

        return PostgresStore.from_url(url)
    raise ValueError(
        f"STORAGE_URL: unknown scheme {scheme!r} in {redact_url(url)!r} "
        "(known: sqlite, jsonl, http, https, mongodb, mongodb+srv, postgresql)"
    )
