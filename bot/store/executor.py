"""`Executor`: how a store call reaches the database, on SQLite or on PostgreSQL.

- SQLite: every call is a body run in the store's executor, one thread owning one connection
  (bot/store/sqlite_executor.py); calls that queue up while it is busy share a transaction (group
  commit).
- PostgreSQL: one-statement calls run on connections the store holds (bot/store/pg_connections.py),
  in autocommit, sharing a statement with calls of their kind that queue up
  (bot/store/pg_groups.py). Other writes are SQLAlchemy transactions; reads and one-statement
  writes run in autocommit (no BEGIN and COMMIT or ROLLBACK round trip around a lone
  statement). Nothing is pinged before use: a connection the server closed while idle is found
  by the error it raises before sending, replaced, and the call run once more.

A call runs to its end even if its caller is cancelled; `close` waits for them.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar

from sqlalchemy import Connection, Executable, event
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.records import StoreClosedError, StoreUnavailableError
from bot.store.engine import WRITE_OPTION, create_sqlite_thread_engine
from bot.store.outages import closed_before_sending, first_line, unavailable
from bot.store.pg_connections import PostgresConnections
from bot.store.pg_groups import Group
from bot.store.prepared import Bound
from bot.store.sqlite_executor import SqliteExecutor

# PostgreSQL: connections the store holds for its one-statement calls. Two, so that under load
# creates and settles queue for them and share statements (bot/store/pg_groups.py): with four
# tasks, two were about 1.3 times the bare driver's rate, four about 1.1 (no queue forms).
LANE_CONNECTIONS = 2

P = ParamSpec("P")
T = TypeVar("T")


class Executor:
    """The ways calls of one store reach its database (the engine stays the store's)."""

    def __init__(self, engine: AsyncEngine, connect_args: Mapping[str, Any] | None) -> None:
        self._engine = engine
        self._writer = engine.execution_options(**{WRITE_OPTION: True})
        # A lone statement needs no transaction around it (each statement has its snapshot).
        self._autocommit = engine.execution_options(isolation_level="AUTOCOMMIT")
        self._sqlite: SqliteExecutor | None = None
        self._pg: PostgresConnections | None = None
        if engine.dialect.name == "sqlite":
            self._sqlite = SqliteExecutor(create_sqlite_thread_engine(engine.url, connect_args))
        else:
            self._pg = PostgresConnections(engine, LANE_CONNECTIONS)
        self._closed = False
        self._in_flight: set[asyncio.Task[Any]] = set()
        self._outage_watchers: list[Callable[[str], None]] = []

    @property
    def postgres(self) -> bool:
        return self._pg is not None

    def check_open(self) -> None:
        if self._closed:
            raise StoreClosedError("the store is closed")

    async def write(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run `body` in one writing transaction: committed if it returns, rolled back if not."""
        return await self._call(True, self._writer, body, args, kwargs)

    async def read(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        return await self._call(False, self._autocommit, body, args, kwargs)

    async def write_alone(
        self, body: Callable[Concatenate[Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """A write of one statement (or of statements each whole on its own): on PostgreSQL in
        autocommit, each statement its own transaction, without a BEGIN and COMMIT round trip
        around it; on SQLite a write like any other."""
        return await self._call(True, self._autocommit, body, args, kwargs)

    async def one(self, statement: Executable, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        """PostgreSQL: one statement in autocommit on a held connection; its rows."""
        assert self._pg is not None
        return await self._uncancellable(self._pg.fetch(statement, values))

    async def grouped(self, group: Group, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        """PostgreSQL: `one`, sharing its statement with calls of its kind that queue up."""
        assert self._pg is not None
        return await self._uncancellable(self._pg.grouped(group, values))

    def bound(self, values: dict[str, Any], statements: Sequence[Executable]) -> Bound:
        """SQLite: `values` with the driver's parameters of `statements` worked out here, in
        the caller's thread, rather than in the executor's (bot/store/prepared.Bound)."""
        assert self._sqlite is not None
        return Bound(values, self._sqlite.dialect, statements)

    def watch(self, seen: Callable[[str], None]) -> Callable[[], None]:
        """Call `seen` with the SQL of every statement sent from now on, BEGIN and COMMIT
        included (SQLite: savepoints too; PostgreSQL: a statement run in autocommit is its own
        transaction, followed by "COMMIT"), in whichever thread sends it; returns what stops
        it."""
        if self._sqlite is not None:
            return self._sqlite.watch(seen)
        assert self._pg is not None
        listeners: dict[str, Callable[..., None]] = {
            "before_cursor_execute": lambda _conn, _cursor, sql, *_: seen(sql),
            "begin": lambda _conn: seen("BEGIN"),
            "commit": lambda _conn: seen("COMMIT"),
        }
        engine = self._engine.sync_engine
        for name, listener in listeners.items():
            event.listen(engine, name, listener)

        def autocommitted(sql: str) -> None:
            seen(sql)
            seen("COMMIT")

        unwatch_held = self._pg.watch(autocommitted)

        def unwatch() -> None:
            for name, listener in listeners.items():
                event.remove(engine, name, listener)
            unwatch_held()

        return unwatch

    def watch_outages(self, seen: Callable[[str], None]) -> Callable[[], None]:
        """Call `seen` with the driver's first line of every call that failed as an outage
        (StoreUnavailableError: the metrics count them); returns what stops it."""
        self._outage_watchers.append(seen)
        return lambda: self._outage_watchers.remove(seen)

    def _told(self, line: str) -> None:
        for seen in list(self._outage_watchers):
            seen(line)

    async def close(self) -> None:
        """Refuse new calls, let those in flight finish (their callers may be gone)."""
        self._closed = True
        if self._sqlite is not None:
            await self._sqlite.close()
        while self._in_flight:
            await asyncio.gather(*self._in_flight, return_exceptions=True)
        if self._pg is not None:
            await self._pg.close()

    async def _call(
        self,
        writer: bool,
        engine: AsyncEngine,
        body: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> T:
        """SQLite: `body` in the executor, as a writer or not. PostgreSQL: on `engine`, in a
        transaction if it is the writing one, else in autocommit."""
        if self._sqlite is not None:
            return await self._in_sqlite_thread(writer, body, *args, **kwargs)
        in_transaction = engine is self._writer
        return await self._uncancellable(self._retried(engine, in_transaction, body, args, kwargs))

    async def _in_sqlite_thread(
        self, writer: bool, body: Callable[..., T], *args: Any, **kwargs: Any
    ) -> T:
        assert self._sqlite is not None
        self.check_open()
        if kwargs:
            body = functools.partial(body, **kwargs)
        with _outages(self._told):
            result: T = await self._sqlite.run(writer, body, *args)
        return result

    async def _retried(
        self,
        engine: AsyncEngine,
        writer: bool,
        body: Callable[..., T],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
    ) -> T:
        """`body` in a transaction (a writer) or in autocommit (a reader). A pooled connection
        the server closed while it was idle fails before sending anything: once, the call goes
        again on a fresh connection (the pool dropped every connection as old as that one)."""
        for attempt in (1, 2):
            try:
                async with engine.connect() as conn:
                    if writer:
                        return await conn.run_sync(_in_transaction, body, *args, **kwargs)
                    return await conn.run_sync(body, *args, **kwargs)
            except DBAPIError as err:
                if attempt == 2 or not closed_before_sending(err):
                    raise
        raise AssertionError("unreachable")

    async def _uncancellable(self, work: Coroutine[Any, Any, T]) -> T:
        """Run a database call to its end even if its caller is cancelled: cut mid-statement,
        a pooled connection is lost (and a transaction's outcome unknown). close() waits."""
        if self._closed:
            work.close()
            raise StoreClosedError("the store is closed")
        task = asyncio.ensure_future(work)
        self._in_flight.add(task)
        task.add_done_callback(self._in_flight.discard)
        with _outages(self._told):
            return await asyncio.shield(task)


@contextlib.contextmanager
def _outages(told: Callable[[str], None]) -> Iterator[None]:
    """A database error that means an outage reaches the caller as StoreUnavailableError
    (and is `told`)."""
    try:
        yield
    except (DBAPIError, OSError) as err:
        if not unavailable(err):
            raise
        line = first_line(err)
        told(line)
        raise StoreUnavailableError(line) from err


def _in_transaction(
    conn: Connection,
    body: Callable[Concatenate[Connection, P], T],
    /,
    *args: P.args,
    **kwargs: P.kwargs,
) -> T:
    with conn.begin():
        return body(conn, *args, **kwargs)
