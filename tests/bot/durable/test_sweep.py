"""DeadlineScheduler over the real SqlStore on SQLite, with short real deadlines.

Bounds on time are generous (an event that should take 50 ms may take seconds on a busy
machine); what is asserted is order and behaviour, never speed.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import text

from bot.durable.sweep import DeadlineScheduler
from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, open_store

WAIT = 5.0  # bound for something that should happen within milliseconds
SHORT = timedelta(milliseconds=50)


def utc_now() -> datetime:
    return datetime.now(UTC)


def record(request_id: str, expires_at: datetime | None) -> RequestRecord:
    return RequestRecord(
        id=request_id,
        tool_name="requestApproval",
        arguments={},
        room_id="room",
        tool_call_id=f"call-{request_id}",
        channel_id="slack",
        channel_type="slack",
        actor_id="U1",
        detached=False,
        created_at=utc_now(),
        expires_at=expires_at,
    )


class Expirer:
    """An `on_due` that settles each due request as timed out, as the bridge does.

    Requests listed in `failing` make it raise instead (and stay pending).
    """

    def __init__(self, store: SqlStore, failing: set[str] | None = None) -> None:
        self.store = store
        self.failing = failing or set()
        self.fired: list[tuple[str, datetime]] = []
        self._changed = asyncio.Condition()

    async def __call__(self, due: RequestRecord) -> None:
        fired_at = utc_now()
        try:
            if due.id in self.failing:
                raise RuntimeError(f"on_due failed for {due.id}")
            await self.store.settle(Settlement(due.id, RequestStatus.TIMED_OUT, fired_at))
        finally:
            async with self._changed:
                self.fired.append((due.id, fired_at))
                self._changed.notify_all()

    def ids(self) -> list[str]:
        return [request_id for request_id, _ in self.fired]

    async def wait_for(self, request_id: str, count: int = 1) -> datetime:
        """When `request_id` was offered for the `count`-th time."""
        async with asyncio.timeout(WAIT), self._changed:
            await self._changed.wait_for(lambda: self.ids().count(request_id) >= count)
        return [at for rid, at in self.fired if rid == request_id][count - 1]


class QueryCounter:
    """Counts the statements a store sends to its database."""

    def __init__(self, store: SqlStore) -> None:
        self.count = 0
        store.watch(self._seen)

    def _seen(self, _sql: str) -> None:
        self.count += 1


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    opened = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}")
    try:
        yield opened
    finally:
        await opened.close()


@pytest.fixture
def expirer(store: SqlStore) -> Expirer:
    return Expirer(store)


class Watched:
    """The store as the scheduler reads it (a DeadlineSource), telling the test what the loop
    asked: it goes to sleep right after each `next_deadline`, so `asleep()` is the event of
    the loop reaching its sleep; a query that failed is counted as failed."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store
        self.asked = 0  # next_deadline answered
        self.failed = 0  # queries that raised
        self._changed = asyncio.Condition()

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        try:
            return await self.store.due_requests(now, limit)
        except Exception:
            await self._count("failed")
            raise

    async def next_deadline(self) -> datetime | None:
        try:
            deadline = await self.store.next_deadline()
        except Exception:
            await self._count("failed")
            raise
        await self._count("asked")
        return deadline

    async def _count(self, name: str) -> None:
        async with self._changed:
            setattr(self, name, getattr(self, name) + 1)
            self._changed.notify_all()

    async def until(self, done: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT), self._changed:
            await self._changed.wait_for(done)

    async def asleep(self, after: int) -> None:
        """Until the loop has gone to sleep more than `after` times in all."""
        await self.until(lambda: self.asked > after)


@pytest.fixture
def watched(store: SqlStore) -> Watched:
    return Watched(store)


@pytest.fixture
async def scheduler(watched: Watched, expirer: Expirer) -> AsyncIterator[DeadlineScheduler]:
    running = DeadlineScheduler(watched, expirer, retry_delay=0.1)
    try:
        yield running
    finally:
        await running.stop()


async def create(store: SqlStore, request_id: str, expires_at: datetime | None) -> datetime | None:
    await store.create_request(record(request_id, expires_at))
    return expires_at


async def quiet() -> None:
    """The time a loop woken by mistake would take to query: an absence has no event."""
    await asyncio.sleep(0.2)


async def test_start_sweeps_what_fell_due_while_down(
    store: SqlStore, expirer: Expirer, scheduler: DeadlineScheduler
) -> None:
    now = utc_now()
    await create(store, "later", now - timedelta(seconds=1))
    await create(store, "earlier", now - timedelta(seconds=2))
    await create(store, "future", now + timedelta(minutes=5))
    await create(store, "no-deadline", None)

    await scheduler.start()

    assert expirer.ids() == ["earlier", "later"]
    assert [r.id for r in await store.list_pending()] == ["future", "no-deadline"]


async def test_fires_at_the_deadline(
    store: SqlStore, expirer: Expirer, scheduler: DeadlineScheduler
) -> None:
    await scheduler.start()
    expires_at = await create(store, "soon", utc_now() + SHORT)
    assert expires_at is not None
    scheduler.poke(expires_at)

    fired_at = await expirer.wait_for("soon")
    assert fired_at >= expires_at
    settled = await store.get_request("soon")
    assert settled is not None and settled.status is RequestStatus.TIMED_OUT


async def test_deadline_stored_before_start_fires_unpoked(
    store: SqlStore, expirer: Expirer, scheduler: DeadlineScheduler
) -> None:
    await create(store, "soon", utc_now() + SHORT)
    await scheduler.start()
    await expirer.wait_for("soon")


async def test_poke_wakes_it_for_an_earlier_deadline(
    store: SqlStore, watched: Watched, expirer: Expirer, scheduler: DeadlineScheduler
) -> None:
    await create(store, "far", utc_now() + timedelta(minutes=5))
    await scheduler.start()
    await watched.asleep(after=0)

    near = await create(store, "near", utc_now() + SHORT)
    assert near is not None
    scheduler.poke(near)

    await expirer.wait_for("near")
    assert expirer.ids() == ["near"]


async def test_later_poke_costs_no_query(
    store: SqlStore, watched: Watched, scheduler: DeadlineScheduler
) -> None:
    far = await create(store, "far", utc_now() + timedelta(minutes=5))
    assert far is not None
    await scheduler.start()
    await watched.asleep(after=0)
    queries = QueryCounter(store)

    scheduler.poke(far + timedelta(hours=1))
    await quiet()
    assert queries.count == 0

    scheduler.poke(utc_now() + timedelta(minutes=1))
    await watched.asleep(after=1)
    assert queries.count > 0


async def test_idle_until_poked(
    store: SqlStore, watched: Watched, expirer: Expirer, scheduler: DeadlineScheduler
) -> None:
    await scheduler.start()
    await watched.asleep(after=0)
    queries = QueryCounter(store)
    await quiet()
    assert queries.count == 0  # nothing pending: no polling

    expires_at = await create(store, "new", utc_now() + SHORT)
    assert expires_at is not None
    scheduler.poke(expires_at)
    await expirer.wait_for("new")


async def test_survives_an_on_due_that_raises(
    store: SqlStore, caplog: pytest.LogCaptureFixture
) -> None:
    expirer = Expirer(store, failing={"bad"})
    scheduler = DeadlineScheduler(store, expirer, retry_delay=0.1)
    await create(store, "bad", utc_now() + SHORT)
    await create(store, "good", utc_now() + 3 * SHORT)
    with caplog.at_level(logging.ERROR, logger="bot.durable.sweep"):
        await scheduler.start()
        try:
            await expirer.wait_for("good")
            await expirer.wait_for("bad", count=3)  # offered again after the retry delay
        finally:
            await scheduler.stop()

    assert "on_due failed for request bad" in caplog.text
    bad = await store.get_request("bad")
    assert bad is not None and bad.status is RequestStatus.PENDING
    # Retried at the retry delay, not in a tight loop.
    assert expirer.ids().count("bad") < 50


async def test_survives_a_failing_store(
    store: SqlStore,
    watched: Watched,
    expirer: Expirer,
    scheduler: DeadlineScheduler,
    caplog: pytest.LogCaptureFixture,
) -> None:
    # A store that cannot answer is a WARNING line (bot/failures.py), not a traceback a second.
    caplog.set_level(logging.WARNING, logger="bot.durable.sweep")
    await scheduler.start()
    async with store.engine.begin() as conn:
        await conn.execute(text("ALTER TABLE requests RENAME TO requests_away"))
    scheduler.poke(utc_now())
    await watched.until(lambda: watched.failed >= 2)  # the loop's queries fail, are retried
    async with store.engine.begin() as conn:
        await conn.execute(text("ALTER TABLE requests_away RENAME TO requests"))
    assert "deadline sweep failed" in caplog.text
    assert not any(record.exc_info for record in caplog.records)

    expires_at = await create(store, "after", utc_now() + SHORT)
    assert expires_at is not None
    scheduler.poke(expires_at)
    await expirer.wait_for("after")


async def test_stop_is_clean_and_final(
    store: SqlStore, expirer: Expirer, scheduler: DeadlineScheduler
) -> None:
    await scheduler.start()
    assert scheduler.running
    await scheduler.stop()
    await scheduler.stop()
    assert not scheduler.running

    expires_at = await create(store, "orphan", utc_now() + SHORT)
    assert expires_at is not None
    scheduler.poke(expires_at)  # starts nothing: no loop is left to wake, none is made
    assert not scheduler.running
    assert expirer.fired == []


async def test_stop_cancels_an_on_due_in_progress(store: SqlStore) -> None:
    entered = asyncio.Event()

    async def stuck(_: RequestRecord) -> None:
        entered.set()
        await asyncio.Event().wait()

    scheduler = DeadlineScheduler(store, stuck)
    await scheduler.start()
    expires_at = await create(store, "slow", utc_now() + SHORT)
    assert expires_at is not None
    scheduler.poke(expires_at)
    async with asyncio.timeout(WAIT):
        await entered.wait()
        await scheduler.stop()
    assert not scheduler.running


async def test_injected_clock_decides_what_is_due(store: SqlStore, expirer: Expirer) -> None:
    hour_ahead = utc_now() + timedelta(hours=1)
    await create(store, "in-ten-minutes", utc_now() + timedelta(minutes=10))
    await create(store, "tomorrow", utc_now() + timedelta(days=1))

    scheduler = DeadlineScheduler(store, expirer, now=lambda: hour_ahead)
    await scheduler.start()
    await scheduler.stop()

    assert expirer.ids() == ["in-ten-minutes"]


def test_the_scheduler_needs_no_sqlalchemy() -> None:
    import bot.durable.sweep

    source = Path(bot.durable.sweep.__file__).read_text()
    assert "sqlalchemy" not in source
