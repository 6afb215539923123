"""bot/durable/inbox.py on real databases: left-over interactions applied once, by one worker."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from bot.durable.inbox import Inbox
from bot.store import SqlStore
from tests.bot.store.conftest import Database, receive_one

WAIT = 5.0


def click(n: int) -> dict[str, Any]:
    return {"type": "block_actions", "n": n}


class Applied:
    """What an inbox applied, in order (`fail` makes applying payload n raise)."""

    def __init__(self, fail: int | None = None) -> None:
        self.payloads: list[dict[str, Any]] = []
        self.fail = fail
        self._changed = asyncio.Condition()

    async def reach(self, count: int) -> None:
        """Wait until `count` payloads were applied."""
        async with asyncio.timeout(WAIT), self._changed:
            await self._changed.wait_for(lambda: len(self.payloads) >= count)

    async def __call__(self, payload: dict[str, Any]) -> None:
        await asyncio.sleep(0.001)  # let a racing worker interleave
        if payload["n"] == self.fail:
            raise RuntimeError("the router broke")
        async with self._changed:
            self.payloads.append(payload)
            self._changed.notify_all()


@pytest.fixture
async def other(database: Database) -> AsyncIterator[SqlStore]:
    """A second worker's store on the same database."""
    opened = SqlStore.from_url(database.url, schema=database.schema)
    try:
        yield opened
    finally:
        await opened.close()


async def test_a_replay_is_recognised(store: SqlStore) -> None:
    inbox = Inbox(store, "slack", Applied())
    assert await inbox.receive("k1", click(1))
    assert not await inbox.receive("k1", click(1))
    assert await inbox.receive("k2", None)
    assert not await inbox.receive("k2", None)


async def test_interactions_arriving_together_are_written_together(store: SqlStore) -> None:
    statements: list[str] = []
    store.watch(statements.append)
    inbox = Inbox(store, "slack", Applied())
    keys = [f"k{n % 40}" for n in range(50)]  # ten of them replays, racing their originals

    new = await asyncio.gather(*(inbox.receive(key, click(n)) for n, key in enumerate(keys)))

    assert new == [True] * 40 + [False] * 10
    transactions = [sql for sql in statements if sql.startswith("COMMIT")]
    assert 1 <= len(transactions) <= 2  # the first alone, perhaps; the rest together
    assert not await inbox.receive("k0", click(0))


async def test_left_over_rows_are_applied_once_by_one_of_two_workers(
    store: SqlStore, other: SqlStore
) -> None:
    dead = Inbox(store, "slack", Applied())  # received, acked, and died before applying
    for n in range(250):  # more than one batch
        assert await dead.receive(f"k{n}", click(n))
    dead.applied("k0")  # this one it did apply, and marked
    await dead.mark()
    first, second = Applied(), Applied()
    a = Inbox(store, "slack", first, grace=0.0)
    b = Inbox(other, "slack", second, grace=0.0)

    counts = await asyncio.gather(a.sweep(), b.sweep())

    assert sum(counts) == 249
    applied = sorted(p["n"] for p in first.payloads + second.payloads)
    assert applied == list(range(1, 250))
    assert await a.sweep() == await b.sweep() == 0


async def test_young_rows_and_rows_in_flight_are_left_to_their_worker(store: SqlStore) -> None:
    applied = Applied()
    busy = Inbox(store, "slack", applied, grace=0.0)
    assert await busy.receive("mine", click(1))  # being applied by this worker right now
    sweeper = Inbox(store, "slack", Applied(), grace=60.0)
    await Inbox(store, "slack", Applied()).receive("young", click(2))

    assert await busy.sweep() == 1  # "young" (grace 0 here), not its own "mine"
    assert await sweeper.sweep() == 0  # "mine" is younger than a minute
    busy.abandoned("mine")  # its application failed: a sweep may try again
    assert await busy.sweep() == 1
    assert [p["n"] for p in applied.payloads] == [2, 1]


async def test_a_failing_application_is_logged_once_and_not_retried(
    store: SqlStore, caplog: pytest.LogCaptureFixture
) -> None:
    applied = Applied(fail=1)
    inbox = Inbox(store, "slack", applied, grace=0.0)
    await Inbox(store, "slack", Applied()).receive("k1", click(1))
    await Inbox(store, "slack", Applied()).receive("k2", click(2))

    assert await inbox.sweep() == 1
    assert await inbox.sweep() == 0
    assert [p["n"] for p in applied.payloads] == [2]
    failures = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(failures) == 1 and "failed" in failures[0].getMessage()


async def test_start_prunes_and_sweeps_then_keeps_sweeping(store: SqlStore) -> None:
    old = Inbox(store, "slack", Applied())
    await old.receive("applied", click(0))
    old.applied("applied")
    await old.close()  # marks it
    await old.receive("left", click(1))
    applied = Applied()
    inbox = Inbox(store, "slack", applied, grace=0.0, sweep_every=0.01, retention=timedelta(0))
    try:
        await inbox.start()
        assert [p["n"] for p in applied.payloads] == [1]  # applied before start() returned
        assert await receive_one(store, "applied", "slack", None)  # pruned: forgotten

        await Inbox(store, "slack", Applied()).receive("later", click(2))
        await applied.reach(2)
        assert [p["n"] for p in applied.payloads] == [1, 2]
    finally:
        await inbox.close()


async def test_applied_rows_are_marked_together_a_moment_later(store: SqlStore) -> None:
    writes: list[str] = []
    written = asyncio.Event()
    loop = asyncio.get_running_loop()

    def seen(statement: str) -> None:  # on the store's thread, maybe
        if statement.lstrip().upper().startswith("UPDATE INBOX"):
            writes.append(statement)
            loop.call_soon_threadsafe(written.set)

    store.watch(seen)
    inbox = Inbox(store, "slack", Applied(), grace=0.0, mark_delay=0.05)
    for n in range(3):
        await inbox.receive(f"k{n}", click(n))
        inbox.applied(f"k{n}")
    assert await inbox.sweep() == 0  # applied here, not marked yet: not left over
    assert writes == []
    await asyncio.wait_for(written.wait(), 5)  # the marking task's write, however late
    assert len(writes) == 1  # the three at once
    await inbox.receive("k3", click(3))
    inbox.applied("k3")
    await inbox.close()  # marks at once what is waiting, after the marking task is done
    assert len(writes) == 2  # a second write of the three would be a third here
    assert await Inbox(store, "slack", Applied(), grace=0.0).sweep() == 0


async def test_another_surfaces_rows_are_not_swept(store: SqlStore) -> None:
    await Inbox(store, "teams", Applied()).receive("k1", click(1))
    slack = Applied()
    assert await Inbox(store, "slack", slack, grace=0.0).sweep() == 0
    assert slack.payloads == []
