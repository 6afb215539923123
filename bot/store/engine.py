"""Engines for the store: the URL rules and each dialect's connection setup, in one place.

Both the store and the Alembic environment build their engines here, so migrations run with
the same driver, search path and SQLite transaction handling as the application.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import ConnectionPoolEntry

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
        # One writer at a time is all SQLite allows; a few connections serve concurrent reads.
        engine = create_async_engine(target, connect_args=args, pool_size=5, max_overflow=5)
        configure_sqlite(engine)
        return engine
    # pre_ping drops connections the server closed while idle (restarts, idle timeouts).
    return create_async_engine(
        target,
        connect_args=args,
        pool_size=10,
        max_overflow=10,
        pool_pre_ping=True,
        pool_recycle=1800,
    )


def configure_sqlite(engine: AsyncEngine) -> None:
    """WAL, a busy timeout, foreign keys, and transactions that SQLAlchemy begins itself."""
    event.listen(engine.sync_engine, "connect", _on_sqlite_connect)
    event.listen(engine.sync_engine, "begin", _on_sqlite_begin)


def _on_sqlite_connect(dbapi_connection: DBAPIConnection, _record: ConnectionPoolEntry) -> None:
    # The driver's legacy transaction mode skips BEGIN before SELECT and DDL; _on_sqlite_begin
    # takes over so every transaction is a real one.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    # WAL lets readers run beside the writer; NORMAL sync is durable across application
    # crashes (only an OS crash or power loss can lose the last commits).
    for pragma in (
        "journal_mode=WAL",
        "synchronous=NORMAL",
        "foreign_keys=ON",
        f"busy_timeout={int(SQLITE_BUSY_TIMEOUT * 1000)}",
    ):
        cursor.execute(f"PRAGMA {pragma}")
    cursor.close()


def _on_sqlite_begin(conn: Connection) -> None:
    writer = conn.get_execution_options().get(WRITE_OPTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if writer else "BEGIN")
