"""PostgreSQL: LISTEN for the settles of other workers, on a connection of the listener's own,
made again when it is lost (the server restarted, a proxy cut it, an admin terminated it).

Without that, one dropped connection would silence every NOTIFY for the rest of the process.
What was sent while it was down is not heard: the waits re-read their rows now and then
(bot/human_input/holding.py), the holders hear proposals at their heartbeat, and the long polls
re-read theirs (bot/doors/long_polls.py), so a gap costs seconds, not a deadline.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from bot.failures import RepeatedFailures

log = logging.getLogger("bot.store")

RECONNECT_SECONDS = (0.1, 0.5, 1.0, 2.0, 5.0)  # between attempts; the last one repeats


class Listener:
    """LISTEN on `channel`, `callback(payload)` for each notification; `await listener()`
    stops it (what `SqlStore.listen_settled` returns)."""

    def __init__(self, engine: AsyncEngine, channel: str, callback: Callable[[str], None]) -> None:
        self._engine = engine
        self._channel = channel
        self._callback = callback
        self._conn: AsyncConnection | None = None
        self._driver: Any = None
        self._stopped = False
        self._reconnecting: asyncio.Task[None] | None = None
        self._failures = RepeatedFailures(log)
        self.relistened = asyncio.Event()  # set each time it listens again after a loss

    @property
    def server_pid(self) -> int | None:
        """The backend serving the LISTEN now (None while reconnecting)."""
        return self._driver.get_server_pid() if self._driver is not None else None

    async def start(self) -> Listener:
        await self._connect()
        return self

    async def _connect(self) -> None:
        conn = await self._engine.connect()
        try:
            raw = await conn.get_raw_connection()
            driver: Any = raw.driver_connection
            await driver.add_listener(self._channel, self._heard)
            driver.add_termination_listener(self._lost)
        except BaseException:
            await conn.close()
            raise
        self._conn, self._driver = conn, driver

    def _heard(self, _conn: object, _pid: int, _channel: str, payload: str) -> None:
        self._callback(payload)

    def _lost(self, _driver: object) -> None:
        """asyncpg: the connection closed. Unless we closed it, listen again on a new one."""
        if self._stopped or self._reconnecting is not None:
            return
        log.warning("the LISTEN connection for %s was lost; listening again", self._channel)
        self._driver = None
        self.relistened.clear()
        self._reconnecting = asyncio.ensure_future(self._reconnect())

    async def _reconnect(self) -> None:
        old, self._conn = self._conn, None
        if old is not None:  # invalidated: the pool must not hand the dead one out again
            with contextlib.suppress(Exception):
                await old.invalidate()
            with contextlib.suppress(Exception):
                await old.close()
        attempt = 0
        try:
            while not self._stopped:
                try:
                    await self._connect()
                    self._failures.recovered("listening for other workers' settles")
                    self.relistened.set()
                    return
                except Exception as err:
                    self._failures.failed("listening for other workers' settles", err)
                await asyncio.sleep(RECONNECT_SECONDS[min(attempt, len(RECONNECT_SECONDS) - 1)])
                attempt += 1
        finally:
            self._reconnecting = None

    async def __call__(self) -> None:
        """Stop listening and give the connection back."""
        self._stopped = True
        if self._reconnecting is not None:
            self._reconnecting.cancel()
            with contextlib.suppress(BaseException):
                await self._reconnecting
        driver, conn = self._driver, self._conn
        self._driver = self._conn = None
        if driver is not None:
            with contextlib.suppress(Exception):
                await driver.remove_listener(self._channel, self._heard)
        if conn is not None:
            with contextlib.suppress(Exception):
                await conn.close()
