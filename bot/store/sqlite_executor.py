"""SQLite's executor: one thread runs every call of the store, and calls that queue up while it is
busy share one transaction (group commit).

SQLite takes one writer at a time, so a store's writers queue anyway; here they queue in front
of one thread that owns the one connection. When the thread comes back for more and finds
several calls waiting, it runs them all in one transaction and commits once; a lone call is
simply its own transaction, so nothing waits for company. If one call of a batch raises, the
batch is rolled back and each of its calls runs again alone: only that caller sees its error.
Each caller's answer comes back after the commit that made its writes durable, with one wake-up
of the event loop per batch.

A call runs to its end even if its caller is cancelled (a write cut short would leave its
outcome unknown); `close()` lets every queued call finish first.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Dialect
from sqlalchemy.engine import Engine
from sqlalchemy.exc import OperationalError

from bot.store.engine import WRITE_OPTION

Body = Callable[..., Any]

MAX_BATCH = 256  # calls per shared transaction: bounds how long the write lock is held


@dataclass(slots=True)
class _Call:
    writer: bool
    body: Body
    args: tuple[Any, ...]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]
    failed: BaseException | None = None
    value: Any = field(default=None)


class SqliteExecutor:
    """Runs `body(connection, *args)` calls on one thread, batching those that queue up."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._conn: Connection | None = None
        self._traced: tuple[Callable[[str], None], ...] | None = None
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._watchers: tuple[Callable[[str], None], ...] = ()
        self._thread = threading.Thread(target=self._serve, name="hitl-sqlite", daemon=True)
        self._thread.start()

    @property
    def dialect(self) -> Dialect:
        """The dialect of the executor's connection (the one its statements are compiled for)."""
        return self._engine.dialect

    def run(self, writer: bool, body: Body, *args: Any) -> asyncio.Future[Any]:
        """Queue a call; the future is its answer, once its transaction committed."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._calls.put(_Call(writer, body, args, loop, future))
        return future

    def watch(self, seen: Callable[[str], None]) -> Callable[[], None]:
        """`seen(sql)` for every statement the connection runs (in the executor's thread)."""
        self._watchers += (seen,)

        def unwatch() -> None:
            self._watchers = tuple(w for w in self._watchers if w is not seen)

        return unwatch

    async def close(self) -> None:
        """Finish every queued call, then close the connection and stop the thread."""
        self._calls.put(None)
        await asyncio.to_thread(self._thread.join)

    # -- the executor's thread
    # ----------------------------------------------------------------------

    def _serve(self) -> None:
        try:
            while (batch := self._next_batch()) is not None:
                self._run_batch(batch)
                if batch[-1] is None:
                    return
        finally:
            if self._conn is not None:
                self._conn.close()
            self._engine.dispose()

    def _next_batch(self) -> list[Any] | None:
        """The calls waiting now (at least one; None when closed): a trailing None means stop."""
        first = self._calls.get()
        if first is None:
            return None
        batch: list[Any] = [first]
        while len(batch) < MAX_BATCH:
            try:
                more = self._calls.get_nowait()
            except queue.Empty:
                break
            batch.append(more)
            if more is None:
                break
        return batch

    def _run_batch(self, batch: list[Any]) -> None:
        calls: list[_Call] = [call for call in batch if call is not None]
        if not calls:
            return
        if not self._run_together(calls):
            for call in calls:  # one of them raised: each alone, so only it sees its error
                call.failed = None
                self._run_together([call])
        self._answer(calls)

    def _run_together(self, calls: list[_Call]) -> bool:
        """`calls` in one transaction, committed if every one returns: True. If one raises,
        the transaction is rolled back; False when there were several (to be run alone)."""
        try:
            conn = self._connection()
            conn.execution_options(**{WRITE_OPTION: any(call.writer for call in calls)})
            with conn.begin():
                for call in calls:
                    call.value = call.body(conn, *call.args)
        except BaseException as err:  # a call itself, or the BEGIN, or the commit
            self._drop_connection()
            if len(calls) > 1 and not _database_failure(err):
                return False
            for call in calls:
                call.failed = err
        return True

    def _connection(self) -> Connection:
        """The executor's connection, kept between batches (a checkout per batch costs more than
        a short transaction); traced while someone watches."""
        if self._conn is None:
            self._conn = self._engine.connect()
            self._traced = None
        if self._traced is not self._watchers:
            self._trace(self._conn)
            self._traced = self._watchers
        return self._conn

    def _drop_connection(self) -> None:
        """After a batch that failed on the connection itself (not merely a call that raised),
        the next batch starts on a fresh one."""
        if self._conn is not None and (self._conn.invalidated or self._conn.in_transaction()):
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None

    def _trace(self, conn: Connection) -> None:
        raw = _driver(conn)
        watchers = self._watchers
        if not watchers:
            raw.set_trace_callback(None)
            return

        def seen(sql: str) -> None:
            for watcher in watchers:
                watcher(sql)

        raw.set_trace_callback(seen)

    @staticmethod
    def _answer(calls: list[_Call]) -> None:
        """One wake-up per event loop for the whole batch."""
        loops: dict[asyncio.AbstractEventLoop, list[_Call]] = {}
        for call in calls:
            loops.setdefault(call.loop, []).append(call)
        for loop, answered in loops.items():
            with contextlib.suppress(RuntimeError):  # a loop closed: nobody waits there now
                loop.call_soon_threadsafe(_settle_futures, answered)


def _settle_futures(calls: list[_Call]) -> None:
    for call in calls:
        if call.future.done():  # its caller was cancelled; the call itself ran
            continue
        if call.failed is not None:
            call.future.set_exception(call.failed)
        else:
            call.future.set_result(call.value)


def _database_failure(err: BaseException) -> bool:
    """An error of the database itself (locked, full, I/O), which every call of the batch would
    meet alone too, rather than one call's own (a constraint it broke, a key it missed)."""
    return isinstance(err, OperationalError | sqlite3.OperationalError)


def _driver(conn: Connection) -> sqlite3.Connection:
    raw = conn.connection.driver_connection
    assert isinstance(raw, sqlite3.Connection)
    return raw
