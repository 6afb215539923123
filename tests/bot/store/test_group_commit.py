"""Group commit: concurrent writes share a transaction (SQLite's executor) or a statement
(PostgreSQL's grouped creates and settles), and every guarantee holds as for one alone: each
caller hears its own outcome, one settle per request wins, a failing call fails alone."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy.exc import IntegrityError

from bot.records import RequestRecord, RequestStatus, Settlement, StoreClosedError
from bot.store import SqlStore, open_store
from tests.bot.store.conftest import Database

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def record(request_id: str, tool_name: str = "requestApproval") -> RequestRecord:
    return RequestRecord(
        id=request_id, tool_name=tool_name, arguments={"action": request_id},
        room_id="slack:C1:1.2", actor_id="alice", created_at=T0,
        expires_at=T0 + timedelta(hours=1),
    )  # fmt: skip


def approve(request_id: str, by: str = "bob") -> Settlement:
    return Settlement(request_id, RequestStatus.RESOLVED, T0, '{"approved": true}', by=by)


def shared(sent: list[str]) -> int:
    """How many of the statements sent wrote several calls at once."""
    writes = [sql for sql in sent if "unnest" in sql]  # PostgreSQL's grouped statements
    return len(writes)


async def test_concurrent_creates_and_settles_are_each_recorded_once(
    store: SqlStore, database: Database
) -> None:
    sent: list[str] = []
    store.watch(sent.append)
    ids = [f"r{n}" for n in range(40)]

    await asyncio.gather(*(store.create_request(record(request_id)) for request_id in ids))
    won = await asyncio.gather(*(store.settle(approve(request_id)) for request_id in ids))
    writes = list(sent)

    assert won == [True] * 40
    for request_id in ids:
        stored = await store.get_request(request_id)
        assert stored is not None and stored.status is RequestStatus.RESOLVED
        actions = [entry.action for entry in await store.list_audit(request_id=request_id)]
        assert actions == ["request.resolved", "request.created"]
    if database.dialect == "postgres":
        assert shared(writes) > 0  # 40 at once queue for the executor's connections, and share
    else:
        begins = [sql for sql in writes if sql.startswith("BEGIN")]
        assert len(begins) < 80  # fewer transactions than calls


async def test_settles_of_one_request_sent_together_have_one_winner(store: SqlStore) -> None:
    await asyncio.gather(*(store.create_request(record(f"r{n}")) for n in range(5)))
    racers = [store.settle(approve(f"r{n % 5}", by=f"U{n}")) for n in range(30)]

    outcomes = await asyncio.gather(*racers)

    for n in range(5):
        mine = [won for index, won in enumerate(outcomes) if index % 5 == n]
        assert mine.count(True) == 1
        winner = [f"U{i}" for i, won in enumerate(outcomes) if won and i % 5 == n]
        stored = await store.get_request(f"r{n}")
        assert stored is not None and [stored.settled_by] == winner
        assert len(await store.list_audit(request_id=f"r{n}")) == 2


async def test_a_create_that_fails_among_others_fails_alone(
    store: SqlStore, database: Database
) -> None:
    await store.create_request(record("taken"))
    sent: list[str] = []
    store.watch(sent.append)
    fresh = [f"r{n}" for n in range(10)]
    calls = [store.create_request(record(request_id)) for request_id in fresh]
    calls.insert(5, store.create_request(record("taken", tool_name="other")))

    outcomes = await asyncio.gather(*calls, return_exceptions=True)

    failed = [outcome for outcome in outcomes if isinstance(outcome, BaseException)]
    assert len(failed) == 1 and isinstance(failed[0], IntegrityError)
    for request_id in fresh:
        assert await store.get_request(request_id) is not None
    taken = await store.get_request("taken")
    assert taken is not None and taken.tool_name == "requestApproval"
    assert len(await store.list_audit(request_id="taken")) == 1
    if database.dialect == "postgres":  # a shared statement failed; each then went alone
        assert shared(sent) > 0


async def test_a_cancelled_caller_s_write_still_lands_with_its_batch(store: SqlStore) -> None:
    tasks = [asyncio.create_task(store.create_request(record(f"r{n}"))) for n in range(10)]
    await asyncio.sleep(0)
    tasks[3].cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    async with asyncio.timeout(5):  # the cancelled one's batch commits all the same
        while await store.get_request("r3") is None:  # noqa: ASYNC110  (no commit event)
            await asyncio.sleep(0.01)
    assert [await store.get_request(f"r{n}") is not None for n in range(10)] == [True] * 10


async def test_calls_after_close_are_refused(database: Database) -> None:
    store = await open_store(database.url, schema=database.schema)
    await store.create_request(record("r1"))
    await store.close()
    with pytest.raises(StoreClosedError):
        await store.get_request("r1")


async def test_writes_under_way_at_close_are_all_written(database: Database) -> None:
    store = await open_store(database.url, schema=database.schema)
    writes = [asyncio.create_task(store.create_request(record(f"r{n}"))) for n in range(20)]
    await asyncio.sleep(0)  # under way: queued in the executor, or sent
    await store.close()
    await asyncio.gather(*writes)
    reopened = await open_store(database.url, schema=database.schema)
    try:
        assert len(await reopened.list_pending()) == 20
    finally:
        await reopened.close()
