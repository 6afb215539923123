"""Durable deadlines: expiry lives in the database (`expires_at`), not in in-memory timers.

`DeadlineScheduler` sleeps until the earliest pending deadline, sweeps what is due, and sleeps
again. A restart loses nothing: `start()` sweeps everything that fell due while the process was
down. It talks to the store through its `Deadlines` port only.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Protocol

from bot.failures import RepeatedFailures
from bot.records import RequestRecord, StoreUnavailableError

logger = logging.getLogger(__name__)

OnDue = Callable[[RequestRecord], Awaitable[None]]


class DeadlineSource(Protocol):
    """Where deadlines are kept: requests' `expires_at` (`RequestRows`), or the next
    steps of their escalations (bot/durable/escalations.py)."""

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose deadline is at or before `now`, earliest first."""
        ...

    async def next_deadline(self) -> datetime | None:
        """The earliest deadline among pending requests."""
        ...


def utc_now() -> datetime:
    return datetime.now(UTC)


class DeadlineScheduler:
    """Calls `on_due(record)` for each pending request once its `expires_at` has passed.

    `on_due` is expected to settle the request (e.g. as timed out); a request it leaves pending
    is offered again after `retry_delay`. Its exceptions are logged and never stop the loop.

    The loop queries `store.next_deadline()` (an index lookup) and sleeps until then. With
    nothing pending it sleeps until `poke()`; `recheck_interval` (60 s by default) caps every
    sleep so that deadlines created by other processes, which cannot poke this one, are still
    honoured within that interval.
    """

    def __init__(
        self,
        store: DeadlineSource,
        on_due: OnDue,
        *,
        now: Callable[[], datetime] = utc_now,
        recheck_interval: float = 60.0,
        retry_delay: float = 1.0,
        batch_size: int = 500,
        name: str = "deadline",
    ) -> None:
        self._store = store
        self._on_due = on_due
        self._now = now
        self._recheck_interval = recheck_interval
        self._retry_delay = retry_delay
        self._batch_size = batch_size
        self._name = name  # what it sweeps, in its task's name and its log lines
        self._wake = asyncio.Event()
        # The deadline the loop sleeps towards; None while it sleeps until poked or is between
        # sleeps (then every poke must wake it, as the deadline it is about to read may be stale).
        self._sleeping_until: datetime | None = None
        # The `now` of the latest sweep: what was due then has been offered to on_due.
        self._swept_at: datetime | None = None
        self._task: asyncio.Task[None] | None = None
        # A database that cannot be written fails every sweep alike: one line, not a traceback
        # every `retry_delay`.
        self._failures = RepeatedFailures(logger)

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def start(self) -> None:
        """Sweep everything already due, then keep watching deadlines in the background."""
        if self.running:
            return
        await self.sweep()
        self._task = asyncio.create_task(self._run(), name=f"hitl-{self._name}-scheduler")

    async def stop(self) -> None:
        """Cancel the loop and wait for it; an `on_due` in progress is cancelled too."""
        task, self._task = self._task, None
        if task is None:
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def poke(self, expires_at: datetime) -> None:
        """Tell the loop about a new deadline; it wakes only if it is earlier than its own."""
        if self._sleeping_until is None or expires_at < self._sleeping_until:
            self._wake.set()

    async def sweep(self) -> int:
        """Offer every due request to `on_due` once; returns how many were offered."""
        offered: set[str] = set()
        while True:
            self._swept_at = self._now()
            due = await self._store.due_requests(self._swept_at, self._batch_size)
            fresh = [record for record in due if record.id not in offered]
            for record in fresh:
                offered.add(record.id)
                await self._fire(record)
            # A full batch may hide more; one with nothing new holds only requests that
            # on_due left pending, which wait for the retry delay.
            if len(due) < self._batch_size or not fresh:
                return len(offered)

    async def _run(self) -> None:
        while True:
            try:
                await self._sleep(await self._delay())
                await self.sweep()
                self._failures.recovered(f"the {self._name} sweep")
            except StoreUnavailableError as err:
                self._failures.failed(f"the {self._name} sweep", err)
                self._sleeping_until = None
                await asyncio.sleep(self._retry_delay)
            except Exception:
                logger.exception("%s sweep failed; retrying in %.1f s", self._name,
                                 self._retry_delay)  # fmt: skip
                self._sleeping_until = None
                await asyncio.sleep(self._retry_delay)

    async def _delay(self) -> float:
        """Seconds until the next deadline, capped by the recheck interval."""
        # Cleared before the query, so a poke that lands during it is not lost.
        self._wake.clear()
        self._sleeping_until = None
        deadline = await self._store.next_deadline()
        if deadline is None:
            return self._recheck_interval
        self._sleeping_until = deadline
        if self._swept_at is not None and deadline <= self._swept_at:
            # Already offered by the last sweep and still pending: back off, don't spin.
            return self._retry_delay
        seconds = (deadline - self._now()).total_seconds()
        return min(max(seconds, 0.0), self._recheck_interval)

    async def _sleep(self, seconds: float) -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._wake.wait()

    async def _fire(self, record: RequestRecord) -> None:
        try:
            await self._on_due(record)
        except StoreUnavailableError as err:
            self._failures.failed(f"handling a due {self._name}", err)
        except Exception:
            logger.exception("on_due failed for request %s", record.id)
