"""Which item store a ``STORAGE_URL`` names: the backend is imported only when chosen."""

from __future__ import annotations

import sqlite3

from exceptions import UserError
from external_interface.storage import ItemStore
from utils.names import did_you_mean
from utils.urls import redact_url

SCHEMES = ("sqlite", "jsonl", "http", "https", "mongodb", "mongodb+srv", "postgresql")
KNOWN = "sqlite:///path, jsonl:///dir, http(s)://sink, mongodb://host/db, postgresql://host/db"


def store_from_url(url: str) -> ItemStore:
    """The store ``url`` names, opened; a URL it cannot use (an unknown scheme, a path it
    cannot write, a driver not installed) is a ``UserError`` naming ``STORAGE_URL`` and
    the fix, before anything is crawled."""
    try:
        return _build(url)
    except UserError:
        raise
    except ImportError as exc:  # its message says what to install
        raise UserError(str(exc), "STORAGE_URL") from exc
    except (ValueError, OSError, sqlite3.Error) as exc:
        text = str(exc).removeprefix("STORAGE_URL: ")
        raise UserError(f"STORAGE_URL={redact_url(url)!r} cannot be used: {text}; set it to "
                        f"one of {KNOWN}", "STORAGE_URL") from exc


def _build(url: str) -> ItemStore:
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
    raise ValueError(f"unknown scheme {scheme!r}{did_you_mean(scheme, SCHEMES)}")
