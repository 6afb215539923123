"""A wait on a request another worker holds does not hang to its deadline when the settle's
NOTIFY is lost: the waiting worker re-reads such requests every `recheck_seconds`.

Two workers on one database (tests/bot/store/test_two_workers.py's), the waiting one's
listener dropping the notification of the request on purpose (PostgreSQL); SQLite has no
NOTIFY at all, so there every notification is lost.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest

from bot.human_input import HumanInputHandler
from bot.store import open_store
from tests.bot.store.conftest import Database
from tests.bot.store.test_two_workers import ARGS, HOLD, TOOL, Worker

RECHECK = 0.05  # seconds; the default (5 s) is the settings'
DEADLINE = 60.0  # the wait's own: far beyond the test's patience


class DroppingWorker(Worker):
    """A worker whose listener loses every notification of `lost` (a settle may send more
    than one), and hears the rest."""

    lost: str = ""
    dropped: asyncio.Event

    async def listen(self) -> None:
        self.dropped = asyncio.Event()

        def heard(request_id: str) -> None:
            if request_id == self.lost:
                self.dropped.set()
                return
            task = asyncio.create_task(self.handler.follow(request_id))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        self.stop_listening = await self.store.listen_settled(heard)


async def start(
    database: Database, name: str, worker: type[Worker], recheck_seconds: float = 5.0
) -> Worker:
    store = await open_store(database.url, migrate=name == "holder", schema=database.schema)
    handler = HumanInputHandler(
        store=store, hold_seconds=HOLD, worker_id=name, recheck_seconds=recheck_seconds
    )
    started = worker(handler, store)
    await started.listen()
    return started


@pytest.fixture
async def workers(database: Database) -> AsyncIterator[tuple[Worker, DroppingWorker]]:
    holder = await start(database, "holder", Worker)
    waiting = await start(database, "waiting", DroppingWorker, recheck_seconds=RECHECK)
    assert isinstance(waiting, DroppingWorker)
    try:
        yield holder, waiting
    finally:
        await holder.close()
        await waiting.close()


def read_again(worker: Worker, monkeypatch: pytest.MonkeyPatch) -> asyncio.Event:
    """Set once the worker has read a request's row twice: a wait() loads it (one read), then
    reads it once more behind its hold (a settle that raced the load): a settle after that is
    known only by its NOTIFY, or by a re-read."""
    read = worker.store.get_request
    reads: list[str] = []
    twice = asyncio.Event()

    async def counted(request_id: str) -> Any:
        row = await read(request_id)
        reads.append(request_id)
        if len(reads) >= 2:
            twice.set()
        return row

    monkeypatch.setattr(worker.store, "get_request", counted)
    return twice


async def test_a_lost_notify_costs_a_recheck_not_the_deadline(
    workers: tuple[Worker, DroppingWorker], database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    holder, waiting = workers
    pending = await holder.handler.create(TOOL, ARGS)
    waiting.lost = pending.pending_id
    loaded = read_again(waiting, monkeypatch)
    waited = asyncio.create_task(waiting.handler.wait(pending.pending_id, timeout=DEADLINE))
    await asyncio.wait_for(loaded.wait(), 10)

    assert await holder.handler.answer(pending.pending_id, "blue", by="U1") is True
    if database.dialect == "postgres":  # the settle's NOTIFY came, and was dropped
        await asyncio.wait_for(waiting.dropped.wait(), 10)
    assert await asyncio.wait_for(waited, 10) == "blue"
    assert await holder.handler.wait(pending.pending_id) == "blue"
