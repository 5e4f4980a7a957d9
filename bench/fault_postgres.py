"""PostgreSQL as the item store under fault: the database away for seconds, and a pool
child SIGKILLed while its write waits on PostgreSQL.

Each run stores into a database of its own, created on the server ``POSTGRES_DSN`` names
(default: the local one, reached through its database ``test``) and dropped with
``FORCE`` at teardown. The server is shared (a system service here and in CI), so it is
never stopped or restarted: the faults are made on the run's database alone, from an
administrator connection on the DSN's own database. Where no PostgreSQL answers, or its
user may not create databases, both scenarios are skipped and say why.

A key is the table's primary key, so an item written twice cannot show as two rows: a
doubling would show as items the job counted beyond the keys stored (``fault_measure``).
"""

from __future__ import annotations

import os
import signal
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from bench.fault_launch import start_and_launch
from bench.fault_measure import RunResult, Trial, at_random_progress, owner_of_port
from external_interface.storage.postgres import DEFAULT_SCHEMA, import_psycopg

if TYPE_CHECKING:
    from psycopg import Connection

POSTGRES_DSN = "postgresql://postgres@127.0.0.1:5432/test"
DATABASE_PREFIX = "crawlchain_fault_"
WAITER_TIMEOUT_S = 8.0  # writes go on all job long: one waits on the lock within a second
POLL_S = 0.02

WAITING_WRITERS = """
SELECT pid, client_port FROM pg_stat_activity
WHERE datname = %s AND wait_event_type = 'Lock' AND pid <> %s AND client_port IS NOT NULL
"""


# -- the server and the run's database ---------------------------------------------------
def admin_dsn() -> str:
    return os.environ.get("POSTGRES_DSN", POSTGRES_DSN)


@contextmanager
def admin() -> Iterator[Connection[Any]]:
    """An autocommit connection on the DSN's own database: it outlives the run's."""
    conn = import_psycopg().connect(admin_dsn(), autocommit=True, connect_timeout=3)
    try:
        yield conn
    finally:
        conn.close()


def unavailable() -> str | None:
    """Why the PostgreSQL scenarios cannot run here, or None."""
    try:
        psycopg = import_psycopg()
    except ImportError:
        return "psycopg is not installed (the postgres extra)"
    try:
        with admin() as conn:
            row = conn.execute("SELECT rolsuper OR rolcreatedb FROM pg_roles "
                               "WHERE rolname = current_user").fetchone()
    except psycopg.OperationalError as exc:
        return f"no PostgreSQL at {_where(admin_dsn())} ({str(exc).strip()[:200]}); " \
               "set POSTGRES_DSN"
    if not (row and row[0]):
        return f"the user of POSTGRES_DSN may not create databases ({_where(admin_dsn())})"
    return None


def database_url(name: str) -> str:
    """``STORAGE_URL`` of database ``name`` on the DSN's server, as the DSN's user."""
    return urlunsplit(urlsplit(admin_dsn())._replace(path=f"/{name}"))


def run_database(trial: Trial) -> str:
    """The database the trial's workers store into."""
    return urlsplit(trial.cluster.env["STORAGE_URL"]).path.lstrip("/")


def ident(name: str) -> Any:
    return import_psycopg().sql.Identifier(name)


def sql(template: str, *names: str) -> Any:
    """``template`` with each ``{}`` filled by one quoted identifier."""
    return import_psycopg().sql.SQL(template).format(*map(ident, names))


def create_database(name: str) -> None:
    """From ``template0``: nobody is connected to it (``template1`` may be in use)."""
    with admin() as conn:
        conn.execute(sql("CREATE DATABASE {} TEMPLATE template0", name))


def drop_database(name: str) -> None:
    """Dropped even if a killed child's backend still lingers in it (``FORCE``)."""
    with admin() as conn:
        conn.execute(sql("DROP DATABASE IF EXISTS {} WITH (FORCE)", name))


def postgres_start(trial: Trial, workers: int) -> None:
    """A fresh database is the item store (``STORAGE_URL``), dropped at teardown."""
    name = f"{DATABASE_PREFIX}{uuid.uuid4().hex[:12]}"
    create_database(name)
    trial.cleanups.append(lambda: drop_database(name))
    trial.cluster.env["STORAGE_URL"] = database_url(name)
    start_and_launch(trial, workers)


# -- the database down -----------------------------------------------------------------
def take_database_down(trial: Trial) -> None:
    """The database goes away for 1.5-4 s as in a server restart or a failover: every
    connection to it is terminated (mid-transaction ones included, so a write may be
    committed without its writer hearing so) and new ones are refused until it is back.
    ``ALLOW_CONNECTIONS false`` refuses superusers too, and touches no other database."""
    at_random_progress(trial)
    name, seconds = run_database(trial), trial.rng.uniform(1.5, 4.0)
    with admin() as conn:
        trial.fault()
        conn.execute(sql("ALTER DATABASE {} ALLOW_CONNECTIONS false", name))
        try:
            killed = terminate_backends(conn, name)
            time.sleep(seconds)
        finally:
            conn.execute(sql("ALTER DATABASE {} ALLOW_CONNECTIONS true", name))
    trial.note(f"{killed} connections terminated; the database refused connections for "
               f"{seconds:.1f}s")


def terminate_backends(conn: Connection[Any], name: str) -> int:
    """``pg_terminate_backend`` of every session on database ``name``; how many."""
    rows = conn.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE datname = %s AND pid <> pg_backend_pid()", (name,)).fetchall()
    return sum(1 for (done,) in rows if done)


# -- a writer killed while it waits ------------------------------------------------------
def kill_waiting_writer(trial: Trial) -> None:
    """Another session locks every item table (``ACCESS EXCLUSIVE``, as a migration or a
    ``VACUUM FULL`` would); the first pool child whose write waits on it is SIGKILLed, and
    the lock is released 0.3-1.5 s later. The dead child's transaction never commits (the
    store sends COMMIT only once its rows' results are back; the orphaned backend runs the
    rows, then reads EOF and rolls back); its message must be delivered again and its
    items stored once."""
    at_random_progress(trial)
    name = run_database(trial)
    with _connect(database_url(name)) as holder:
        tables = item_tables(holder)
        if not tables:
            trial.problem("no item table existed yet: nothing to lock")
            return
        holder.execute(sql(lock_statement(len(tables)), *_flatten(tables)))
        trial.fault()
        killed = kill_first_waiter(trial, name, holder.info.backend_pid)
        time.sleep(trial.rng.uniform(0.3, 1.5))
        holder.rollback()
    if killed is None:
        trial.problem(f"no write waited on the lock within {WAITER_TIMEOUT_S:.0f}s: "
                      "nothing was killed")
    else:
        trial.note(f"killed pool child {killed} while its write waited on the lock")


# How a worker says it runs a message again whose pool child died, or sends lost units again.
REDELIVERED = ("came back after a worker died", "came back: going on with",
               "held by no queue; sent again")


def check_redelivered(trial: Trial, result: RunResult) -> list[str]:
    """The killed child's message must have come back (or its units been revived): lost 0
    alone would not show that the write the kill interrupted was ever made again."""
    logs = "".join(p.read_text(errors="replace") for p in trial.cluster.workdir.glob("w*.log"))
    again = sum(logs.count(sign) for sign in REDELIVERED)
    result.notes.append(f"{again} messages came back or were revived")
    return [] if again else ["the killed child's message never came back"]


@contextmanager
def _connect(url: str) -> Iterator[Connection[Any]]:
    """A connection in a transaction (not autocommit): the lock lasts until rollback."""
    conn = import_psycopg().connect(url, connect_timeout=3)
    try:
        yield conn
    finally:
        conn.close()


def item_tables(conn: Connection[Any]) -> list[tuple[str, str]]:
    """The item tables the workers have created so far, as (schema, table)."""
    rows = conn.execute("SELECT schemaname, tablename FROM pg_tables WHERE schemaname = %s "
                        "ORDER BY tablename", (DEFAULT_SCHEMA,)).fetchall()
    return [(str(schema), str(table)) for schema, table in rows]


def lock_statement(tables: int) -> str:
    return "LOCK TABLE " + ", ".join(["{}.{}"] * tables) + " IN ACCESS EXCLUSIVE MODE"


def _flatten(tables: list[tuple[str, str]]) -> list[str]:
    return [part for table in tables for part in table]


def kill_first_waiter(trial: Trial, name: str, holder_pid: int) -> int | None:
    """SIGKILL the pool child whose backend first waits on a lock; its pid, or None."""
    deadline = time.monotonic() + WAITER_TIMEOUT_S
    with admin() as conn:
        while time.monotonic() < deadline:
            for _, port in conn.execute(WAITING_WRITERS, (name, holder_pid)).fetchall():
                child = owner_of_port(trial, int(port))
                if child is not None:
                    os.kill(child, signal.SIGKILL)
                    return child
            time.sleep(POLL_S)
    return None


def _where(dsn: str) -> str:
    """host:port/database of ``dsn``, without its user or password."""
    parts = urlsplit(dsn)
    return f"{parts.hostname}:{parts.port or 5432}{parts.path}"
