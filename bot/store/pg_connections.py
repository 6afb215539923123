"""PostgreSQL's held connections: a few asyncpg connections the store keeps for its one-statement
calls.

A call here is one statement in autocommit (its own transaction, one round trip; the store's
multi-step writes are single statements with data-modifying CTEs, bot/store/request_rows.py),
run on the raw asyncpg connection with asyncpg's prepared-statement cache. The connections come
from the store's SQLAlchemy pool once (so they carry its settings: the search path, the JSON
codecs) and stay checked out: taking one is a list pop, not a pool checkout.

No connection is pinged before use. One found closed is replaced before anything is sent; one
that fails with "connection is closed" (asyncpg raises it before sending) is replaced and the
call retried once. A connection lost in the middle of a call is not retried (whether the
statement committed is unknown): the caller gets the error, as an outage.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import asyncpg
from sqlalchemy import Executable
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.store.pg_groups import Call, Group, Rows, run_grouped
from bot.store.prepared import driver_error, prepared


@dataclass(slots=True)
class _Held:
    conn: AsyncConnection  # SQLAlchemy's, kept to give the connection back to its pool
    driver: asyncpg.Connection


class PostgresConnections:
    """Runs single statements on up to `size` held asyncpg connections."""

    def __init__(self, engine: AsyncEngine, size: int = 4) -> None:
        self._engine = engine
        self._permits = asyncio.Semaphore(size)  # in use + idle never exceed `size`
        self._idle: list[_Held] = []
        self._watchers: tuple[Callable[[str], None], ...] = ()

    def watch(self, seen: Callable[[str], None]) -> Callable[[], None]:
        """`seen(sql)` for every statement sent from now on."""
        self._watchers += (seen,)

        def unwatch() -> None:
            self._watchers = tuple(w for w in self._watchers if w is not seen)

        return unwatch

    async def fetch(self, statement: Executable, values: Mapping[str, Any]) -> Rows:
        """The statement's returned rows, converted (bot/store/prepared.py)."""
        async with self._permits:
            return await self._run(statement, values)

    async def grouped(self, group: Group, values: Mapping[str, Any]) -> Rows:
        """A call of `group`'s kind: alone if a connection is free, else sent with the calls
        of its kind queued with it when one frees (bot/store/pg_groups.py)."""
        call = Call(values, asyncio.get_running_loop().create_future())
        group.queue.append(call)
        async with self._permits:
            if not call.taken:  # else another caller sends it: its answer comes from there
                await run_grouped(group, group.take(call), self._run)
        return await call.future

    async def _run(self, statement: Executable, values: Mapping[str, Any]) -> Rows:
        """One statement on a held connection (the caller holds a permit)."""
        ready = prepared(statement, self._engine.dialect)
        args = ready.args(values)
        for watcher in self._watchers:
            watcher(ready.sql)
        held = await self._take()
        try:
            rows = await self._fetch_on(held, ready.sql, args)
        except (asyncpg.PostgresError, asyncpg.InterfaceError) as err:
            raise driver_error(err, ready.sql) from err
        finally:
            await self._give_back(held)
        return [ready.row(row) for row in rows]

    async def _fetch_on(self, held: _Held, sql: str, args: list[Any]) -> list[Any]:
        try:
            rows: list[Any] = await held.driver.fetch(sql, *args)
            return rows
        except asyncpg.InterfaceError:
            if not held.driver.is_closed():
                raise
        # Closed before anything was sent (the server ended it while it sat idle): the same
        # place gets a fresh connection, and the call goes once more.
        await _discard(held)
        fresh = await self._open()
        held.conn, held.driver = fresh.conn, fresh.driver
        retried: list[Any] = await held.driver.fetch(sql, *args)
        return retried

    async def _take(self) -> _Held:
        while self._idle:
            held = self._idle.pop()
            if not held.driver.is_closed():
                return held
            await _discard(held)
        return await self._open()

    async def _give_back(self, held: _Held) -> None:
        if held.driver.is_closed():  # lost during the call: a new one is opened when needed
            await _discard(held)
        else:
            self._idle.append(held)

    async def _open(self) -> _Held:
        conn = await self._engine.connect()
        try:
            raw = await conn.get_raw_connection()
        except BaseException:
            await conn.close()
            raise
        driver = raw.driver_connection
        assert isinstance(driver, asyncpg.Connection)
        return _Held(conn, driver)

    async def close(self) -> None:
        """Give every connection back to the pool (the store lets calls in flight end first)."""
        idle, self._idle = self._idle, []
        for held in idle:
            with contextlib.suppress(Exception):
                await held.conn.close()


async def _discard(held: _Held) -> None:
    """Drop a dead connection: SQLAlchemy's pool forgets it."""
    with contextlib.suppress(Exception):
        await held.conn.invalidate()
    with contextlib.suppress(Exception):
        await held.conn.close()
