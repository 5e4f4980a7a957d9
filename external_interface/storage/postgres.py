"""PostgreSQL item store: one table per collection, one row per key, the item as JSONB.

For multi-host runs whose hot store is a relational database. Tables live in one
schema, ``crawlchain`` unless the URL's ``schema`` option names another, and read::

    CREATE TABLE crawlchain.posts (key text PRIMARY KEY, data jsonb NOT NULL,
        job_id text NOT NULL, first_seen timestamptz NOT NULL, last_seen timestamptz NOT NULL)

A batch is one transaction of ``INSERT ... ON CONFLICT (key) DO UPDATE`` rows (sent
pipelined by psycopg's ``executemany``): ``first_seen`` is set on insert only, the rest on
every write, so a batch written twice, or two workers writing one key, leave one row.
The session runs with ``synchronous_commit = on`` whatever the server's default, so a
batch is on disk (the WAL flushed) when ``upsert`` returns. A server that cannot be
reached, or goes away mid-batch, is ``StorageUnavailable`` (the transaction rolled
back, the connection opened again on the next call).

psycopg is optional (``pip install 'crawlchain[postgres]'``): it is imported when a store
is built, never when this module is imported. Connections open on first use, so a
store built before the worker forks opens its own in each child.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime
from types import ModuleType
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from exceptions import StorageUnavailable
from external_interface.storage import Item

if TYPE_CHECKING:
    from psycopg import Connection

DEFAULT_SCHEMA = "crawlchain"
CONNECT_TIMEOUT_S = 5
READ_CHUNK = 2_000  # rows per round trip of a streamed read
NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}")

CREATE = """
CREATE TABLE IF NOT EXISTS {table} (
    key        text PRIMARY KEY,
    data       jsonb NOT NULL,
    job_id     text NOT NULL,
    first_seen timestamptz NOT NULL,
    last_seen  timestamptz NOT NULL
)
"""
UPSERT = """
INSERT INTO {table} (key, data, job_id, first_seen, last_seen)
VALUES (%s, %s::jsonb, %s, %s, %s)
ON CONFLICT (key) DO UPDATE SET
    data = excluded.data, job_id = excluded.job_id, last_seen = excluded.last_seen
"""
READ = """
SELECT key, data, job_id, extract(epoch FROM first_seen)::float8,
       extract(epoch FROM last_seen)::float8
FROM {table} WHERE ({job}::text IS NULL OR job_id = {job})
    AND ({since}::float8 IS NULL OR last_seen >= to_timestamp({since}::float8))
ORDER BY key
"""


def import_psycopg() -> ModuleType:
    """psycopg (3), or an ImportError that says how to install it."""
    try:
        import psycopg
    except ImportError as exc:
        raise ImportError(
            "STORAGE_URL is a postgresql:// URL but psycopg is not installed: "
            "pip install 'crawlchain[postgres]' (or: pip install 'psycopg[binary]')"
        ) from exc
    return psycopg


class PostgresStore:
    """Items in PostgreSQL tables; safe for many worker processes on many hosts."""

    def __init__(self, dsn: str, schema: str = DEFAULT_SCHEMA) -> None:
        self._pg = import_psycopg()
        self.dsn = dsn
        self.schema = _name(schema, "schema")
        self._conn: Connection[Any] | None = None
        self._tables: set[str] = set()  # created (or found) by this store already
        self._away = (self._pg.OperationalError, self._pg.InterfaceError)

    @classmethod
    def from_url(cls, url: str) -> PostgresStore:
        """``postgresql://user:pw@host:port/database?schema=crawlchain&<libpq options>``.

        A short ``connect_timeout`` (5 s) unless the URL sets one: a write to an
        unreachable server must fail fast with ``StorageUnavailable``, not hold a worker.
        """
        parts = urlsplit(url)
        options = dict(parse_qsl(parts.query))
        schema = options.pop("schema", DEFAULT_SCHEMA)
        options.setdefault("connect_timeout", str(CONNECT_TIMEOUT_S))
        return cls(urlunsplit(parts._replace(query=urlencode(options))), schema)

    def upsert(self, job_id: str, items: Sequence[Item]) -> int:
        """One transaction for the batch, committed synchronously: durable on return."""
        if not items:
            return 0
        now = datetime.now(UTC)
        batches: dict[str, list[tuple[str, str, str, datetime, datetime]]] = {}
        for item in items:
            batches.setdefault(item.collection, []).append(
                (item.item_key(), item.model_dump_json(), job_id, now, now))
        for rows in batches.values():  # one lock order for every writer: no deadlocks
            rows.sort(key=lambda row: row[0])  # stable: a key's last write stays last
        try:
            conn = self._connection()
            self._create_tables(conn, list(batches))
            with conn.transaction():
                for collection, rows in batches.items():
                    table = self._ident(collection)
                    conn.cursor().executemany(self._sql(UPSERT, table=table), rows)
        except self._away as exc:
            raise self._unavailable(exc) from exc
        return len(items)

    def count(self, collection: str) -> int:
        try:
            conn = self._connection()
            if not self._exists(conn, collection):
                return 0
            with conn.transaction():
                row = conn.execute(self._sql("SELECT count(*) FROM {table}",
                                             table=self._ident(collection))).fetchone()
        except self._away as exc:
            raise self._unavailable(exc) from exc
        return int(row[0]) if row else 0

    def collections(self) -> list[str]:
        try:
            conn = self._connection()
            with conn.transaction():
                rows = conn.execute(
                    "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
                    " WHERE n.nspname = %s AND c.relkind = 'r' ORDER BY c.relname",
                    (self.schema,)).fetchall()
        except self._away as exc:
            raise self._unavailable(exc) from exc
        return [str(name) for (name,) in rows]

    def read(self, collection: str, *, job_id: str | None = None,
             since: float | None = None) -> Iterator[dict[str, Any]]:
        """Streamed by a server-side cursor on a connection of its own, in one snapshot."""
        table = self._ident(collection)
        try:
            reader = self._pg.connect(self.dsn)
        except self._away as exc:
            raise self._unavailable(exc) from exc
        try:
            reader.isolation_level = self._pg.IsolationLevel.REPEATABLE_READ
            reader.read_only = True
            if not self._exists(reader, collection):
                return
            query = self._sql(READ, table=table, job="%(job)s", since="%(since)s")
            with reader.cursor(name="crawlchain_read") as cursor:
                cursor.itersize = READ_CHUNK
                cursor.execute(query, {"job": job_id, "since": since})
                for key, data, written_by, first_seen, last_seen in cursor:
                    yield {"key": key, "data": data, "job_id": written_by,
                           "first_seen": first_seen, "last_seen": last_seen}
        except self._away as exc:
            raise self._unavailable(exc) from exc
        finally:
            reader.close()

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def drop_schema(self) -> None:
        """Delete the schema and every table in it (tests and benchmarks)."""
        conn = self._connection()
        with conn.transaction():
            conn.execute(self._sql("DROP SCHEMA IF EXISTS {schema} CASCADE"))
        self._tables.clear()

    # -- helpers ---------------------------------------------------------------------
    def _connection(self) -> Connection[Any]:
        """The store's connection, opened (again) when there is none or it broke."""
        if self._conn is None or self._conn.closed or self._conn.broken:
            self._conn = self._pg.connect(self.dsn, autocommit=True)
            self._conn.execute("SET synchronous_commit TO on")
        return self._conn

    def _create_tables(self, conn: Connection[Any], collections: list[str]) -> None:
        """The collections' tables, created on first use in a transaction of their own;
        concurrent creators on other hosts take turns on an advisory lock."""
        missing = [c for c in collections if c not in self._tables]
        if not missing:
            return
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (self.schema,))
            conn.execute(self._sql("CREATE SCHEMA IF NOT EXISTS {schema}"))
            for collection in missing:
                conn.execute(self._sql(CREATE, table=self._ident(collection)))
        self._tables.update(missing)

    def _exists(self, conn: Connection[Any], collection: str) -> bool:
        row = conn.execute("SELECT to_regclass(%s) IS NOT NULL",
                           (f'"{self.schema}"."{_name(collection, "collection")}"',)).fetchone()
        return bool(row and row[0])

    def _ident(self, collection: str) -> Any:
        sql = self._pg.sql
        return sql.Identifier(self.schema, _name(collection, "collection"))

    def _sql(self, template: str, **parts: Any) -> Any:
        sql = self._pg.sql
        given = {name: sql.SQL(part) if isinstance(part, str) else part
                 for name, part in parts.items()}
        return sql.SQL(template).format(schema=sql.Identifier(self.schema), **given)

    def _unavailable(self, exc: Exception) -> StorageUnavailable:
        self.close()  # a broken connection is opened again on the next call
        parts = urlsplit(self.dsn)  # no user or password in the message
        where = f"{parts.hostname}:{parts.port or 5432}{parts.path}"
        return StorageUnavailable(f"postgresql {where}: {type(exc).__name__}: {exc}")


def _name(value: str, what: str) -> str:
    """A collection or schema name: a plain identifier of at most 63 bytes."""
    if not NAME.fullmatch(value):
        raise ValueError(f"postgresql: {what} name {value!r} is not a plain name "
                         "(letters, digits, _ . -; at most 63)")
    return value
