"""A PostgreSQL store on a schema of its own, or a skip that says why there is none."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from external_interface.storage.postgres import PostgresStore

DSN = os.environ.get("POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def postgres_unreachable() -> str | None:
    """Why PostgreSQL tests cannot run here, or None when they can."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed (the postgres extra)"
    try:
        psycopg.connect(DSN, connect_timeout=3).close()
    except psycopg.OperationalError as exc:
        return f"no PostgreSQL at {DSN} ({str(exc).strip()[:200]}); set POSTGRES_DSN"
    return None


@contextmanager
def postgres_store(prefix: str = "crawlchain_test") -> Iterator[PostgresStore]:
    """A store on a fresh schema, dropped afterwards: runs never see each other's tables."""
    reason = postgres_unreachable()
    if reason:
        pytest.skip(reason)
    store = PostgresStore.from_url(f"{DSN}{'&' if '?' in DSN else '?'}schema="
                                   f"{prefix}_{uuid.uuid4().hex[:12]}")
    try:
        yield store
    finally:
        store.drop_schema()
        store.close()
