"""Engines for the store: the URL rules and each dialect's connection setup, in one place.

Both the store and the Alembic environment build their engines here, so migrations run with
the same driver, search path and SQLite transaction handling as the application.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import create_engine as sa_create_engine
from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, Engine, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import ArgumentError
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry, PoolResetState

DEFAULT_URL = "sqlite+aiosqlite:///hitl-bridge.db"

# Plain backend names are rewritten to the async drivers; explicit drivers are left alone.
_ASYNC_DRIVERS = {
    "postgresql": "postgresql+asyncpg",
    "postgres": "postgresql+asyncpg",
    "sqlite": "sqlite+aiosqlite",
}

# Execution option that marks a transaction as a writer, so SQLite takes its write lock at
# BEGIN. A deferred transaction that reads and then writes can fail with SQLITE_BUSY at once
# (the busy timeout does not apply to a lock upgrade), so every writer begins IMMEDIATE.
WRITE_OPTION = "hitl_writer"

# Seconds a SQLite writer waits for another process's write lock before failing.
SQLITE_BUSY_TIMEOUT = 30.0


def async_url(url: str | URL) -> URL:
    """`url` with `postgresql://`, `postgres://` and `sqlite://` mapped to the async drivers."""
    parsed = make_url(url)
    driver = _ASYNC_DRIVERS.get(parsed.drivername)
    return parsed.set(drivername=driver) if driver else parsed


def shown_url(url: str) -> str:
    """`url` as it may be printed or logged: its password as `***`, in the user part or the
    query (`?password=`), where SQLAlchemy reads it to connect; a URL it cannot read keeps
    nothing of what comes before its host's last `@`."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        parsed = None
    if parsed is None or "@" in (parsed.host or ""):  # an @ in the password, unescaped
        scheme, sep, rest = url.partition("://")
        return f"{scheme}{sep}***@{rest.rpartition('@')[2]}" if "@" in rest else url
    if "password" in parsed.query:
        parsed = parsed.update_query_dict({"password": "***"})
    return parsed.render_as_string(hide_password=True)


def is_sqlite(url: str | URL) -> bool:
    return make_url(url).get_backend_name() == "sqlite"


def connect_args_for(
    url: str | URL, *, schema: str | None = None, connect_args: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Driver connect arguments; `schema` puts a PostgreSQL connection's search path on it."""
    args = dict(connect_args or {})
    if is_sqlite(url):
        if schema is not None:
            raise ValueError("schema is only supported on PostgreSQL")
        args.setdefault("timeout", SQLITE_BUSY_TIMEOUT)
    elif schema is not None:
        settings = dict(args.get("server_settings", {}))
        settings["search_path"] = '"' + schema.replace('"', '""') + '"'
        args["server_settings"] = settings
    return args


def create_engine(
    url: str | URL, *, schema: str | None = None, connect_args: Mapping[str, Any] | None = None
) -> AsyncEngine:
    """The store's engine, pooled and set up for its dialect."""
    target = async_url(url)
    args = connect_args_for(target, schema=schema, connect_args=connect_args)
    if is_sqlite(target):
        if target.database in (None, "", ":memory:"):
            # Each pooled connection (and the migration's) would see its own empty database.
            raise ValueError("in-memory SQLite cannot be shared by the store; use a file")
        # One writer at a time is all SQLite allows; a few connections serve concurrent reads.
        # Resetting returned connections is left to _on_sqlite_reset, which skips the rollback
        # when no transaction is open (each rollback is a hop to the driver's thread).
        engine = create_async_engine(
            target, connect_args=args, pool_size=5, max_overflow=5, pool_reset_on_return=None
        )
        configure_sqlite(engine)
        return engine
    # No pre-ping (a round trip per checkout): a connection the server closed while idle
    # fails before sending anything, and the store replaces it and runs the call once more
    # (bot/store/executor.py; tests/bot/store/test_dead_connections.py). PostgreSQL's held
    # connections holds LANE_CONNECTIONS (2) of these connections.
    return create_async_engine(
        target, connect_args=args, pool_size=14, max_overflow=10, pool_recycle=1800
    )


def configure_sqlite(engine: AsyncEngine | Engine) -> None:
    """WAL, a busy timeout, foreign keys, and transactions that SQLAlchemy begins itself."""
    target = engine.sync_engine if isinstance(engine, AsyncEngine) else engine
    event.listen(target, "connect", _on_sqlite_connect)
    event.listen(target, "begin", _on_sqlite_begin)
    event.listen(target, "reset", _on_sqlite_reset)


def create_sqlite_thread_engine(url: str | URL, connect_args: Mapping[str, Any] | None) -> Engine:
    """A plain (sync) engine on the same SQLite file, used from one dedicated thread.

    Through aiosqlite every statement is a hand-off to the driver's thread and back (a
    lifecycle made ~60 of them); here a whole transaction is one hand-off (see SqlStore).
    """
    target = make_url(url).set(drivername="sqlite+pysqlite")
    args = connect_args_for(target, connect_args=connect_args)
    args["check_same_thread"] = False  # made in the thread, disposed of from it too
    engine = sa_create_engine(target, connect_args=args, pool_size=1, max_overflow=0)
    configure_sqlite(engine)
    return engine


def _on_sqlite_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    # The driver's legacy transaction mode skips BEGIN before SELECT and DDL; _on_sqlite_begin
    # takes over so every transaction is a real one.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    # WAL lets readers run beside the writer; NORMAL sync is durable across application
    # crashes (only an OS crash or power loss can lose the last commits).
    # (The busy timeout is the driver's `timeout` connect argument, see connect_args_for.)
    for pragma in ("journal_mode=WAL", "synchronous=NORMAL", "foreign_keys=ON"):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _on_sqlite_begin(conn: Connection) -> None:
    writer = conn.get_execution_options().get(WRITE_OPTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")


def _on_sqlite_reset(
    dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, state: PoolResetState
) -> None:
    # The driver is in autocommit mode (see _on_sqlite_connect): a transaction is open only if
    # one of our BEGINs was never ended, e.g. by a task cancelled mid-transaction.
    if not state.asyncio_safe or state.transaction_was_reset:
        return
    if record.driver_connection is not None and record.driver_connection.in_transaction:
        dbapi_connection.rollback()
