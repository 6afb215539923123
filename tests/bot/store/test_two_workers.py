"""Two workers on one database: the worker holding a request decides its settle.

Each worker is a `HumanInputHandler` on an `SqlStore` of its own (its own engine and pool), on
SQLite always and on PostgreSQL when HITL_TEST_POSTGRES_URL is set (see conftest). On
PostgreSQL each worker hears the other's NOTIFYs, as the bridge wires them; SQLite has none, so
a holder hears proposals at its heartbeat. The rule under test (RoomKit's): a resolve() or
answer() that returned True is the answer the waiter gets, and exactly one of them does.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.records import RequestStatus
from bot.store import SqlStore, open_store
from tests.bot.store.conftest import Database

pytestmark = pytest.mark.slow  # a holder's hold lapses (HOLD) and heartbeats are waited for

TOOL = "AskUserQuestion"
ARGS: dict[str, Any] = {"question": "Which colour?"}
HOLD = 1.0  # seconds a silent holder keeps its requests; it beats every HOLD / 4


@dataclass
class Worker:
    handler: HumanInputHandler
    store: SqlStore
    heard: list[RequestUpdate] = field(default_factory=list)
    stop_listening: Callable[[], Awaitable[None]] | None = None
    tasks: set[asyncio.Task[None]] = field(default_factory=set)

    async def listen(self) -> None:
        """Hear the other workers' NOTIFYs (PostgreSQL), as the bridge does."""

        def heard(request_id: str) -> None:
            task = asyncio.create_task(self.handler.follow(request_id))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

        self.stop_listening = await self.store.listen_settled(heard)

    async def close(self) -> None:
        if self.stop_listening is not None:
            await self.stop_listening()
        await asyncio.wait_for(self.handler.drain(), 5)
        await asyncio.gather(*self.tasks, return_exceptions=True)
        await self.store.close()


async def start_worker(database: Database, name: str, *, migrate: bool = False) -> Worker:
    store = await open_store(database.url, migrate=migrate, schema=database.schema)
    worker = Worker(HumanInputHandler(store=store, hold_seconds=HOLD, worker_id=name), store)

    async def observe(update: RequestUpdate) -> None:
        worker.heard.append(update)

    worker.handler.add_observer(observe)
    await worker.listen()
    return worker


async def doomed_holder(database: Database) -> tuple[Worker, str]:
    """A worker that created a request and then died (no heartbeat from now on): its id."""
    doomed = await start_worker(database, "doomed")
    pending = await doomed.handler.create(TOOL, ARGS)
    assert doomed.stop_listening is not None
    await doomed.stop_listening()
    await doomed.store.close()
    return doomed, pending.pending_id


@pytest.fixture
async def workers(database: Database) -> AsyncIterator[tuple[Worker, Worker]]:
    holder = await start_worker(database, "holder", migrate=True)
    other = await start_worker(database, "other")
    try:
        yield holder, other
    finally:
        await holder.close()
        await other.close()


def resolve_at(
    handler: HumanInputHandler, pending_id: str, answer: str, delay: float
) -> asyncio.Future[bool]:
    """Call the synchronous resolve() `delay` seconds from now; the future holds its bool."""
    loop = asyncio.get_running_loop()
    returned: asyncio.Future[bool] = loop.create_future()
    loop.call_later(delay, lambda: returned.set_result(handler.resolve(pending_id, answer)))
    return returned


async def until_loaded(worker: Worker, request_id: str) -> None:
    """Until a wait() on `worker` has loaded the request from its row (a few round trips)."""
    async with asyncio.timeout(5):
        while request_id not in worker.handler.pending:  # noqa: ASYNC110  (no event for it)
            await asyncio.sleep(0.01)


def endings(*workers: Worker) -> list[RenderState]:
    return [u.state for w in workers for u in w.heard if u.state is not RenderState.EXECUTING]


async def test_resolve_on_the_holder_racing_answer_on_another_worker(
    workers: tuple[Worker, Worker], database: Database
) -> None:
    """The holder's synchronous resolve() against another worker's answer(), at every offset
    around the moment the other's answer reaches the holder: exactly one says True, and that
    one is what the waiter gets and what the row holds."""
    holder, other = workers
    rng = random.Random(8)
    iterations = 60 if database.dialect == "postgres" else 30
    wins = {"holder": 0, "other": 0}
    for i in range(iterations):
        pending = await holder.handler.create(TOOL, ARGS)
        waiter = asyncio.create_task(holder.handler.wait(pending.pending_id, timeout=30))
        await asyncio.sleep(0)
        offset = (
            0.0 if i % 3 == 0 else rng.uniform(0, 0.03 if database.dialect == "postgres" else 0.4)
        )
        resolved = resolve_at(holder.handler, pending.pending_id, f"holder-{i}", offset)
        other_won = await asyncio.wait_for(
            other.handler.answer(pending.pending_id, f"other-{i}"), 10
        )
        holder_won = await resolved
        got = await asyncio.wait_for(waiter, 10)

        assert [holder_won, other_won].count(True) == 1, (i, holder_won, other_won)
        winner = f"holder-{i}" if holder_won else f"other-{i}"
        assert got == winner, (i, holder_won, other_won, got)
        await holder.handler.drain()
        record = await other.store.get_request(pending.pending_id)
        assert record is not None
        assert (record.status, record.result) == (RequestStatus.RESOLVED, winner)
        wins["holder" if holder_won else "other"] += 1
    assert wins["holder"] and wins["other"], wins  # both orders happened


async def test_answer_on_the_holder_racing_answer_on_another_worker(
    workers: tuple[Worker, Worker],
) -> None:
    holder, other = workers
    for i in range(10):
        pending = await holder.handler.create(TOOL, ARGS)
        waiter = asyncio.create_task(holder.handler.wait(pending.pending_id, timeout=30))
        names = ["other", "holder"]
        racers = [other.handler.answer(pending.pending_id, "other", by="U2"),
                  holder.handler.answer(pending.pending_id, "holder", by="U1")]  # fmt: skip
        if i % 2:
            names.reverse()
            racers.reverse()
        won = await asyncio.wait_for(asyncio.gather(*racers), 10)
        assert sorted(won) == [False, True]
        assert await asyncio.wait_for(waiter, 10) == names[won.index(True)]


async def test_two_other_workers_racing_one_wins(
    workers: tuple[Worker, Worker], database: Database
) -> None:
    """Two proposals for one request: the holder applies the first, refuses the second."""
    holder, other = workers
    third = await start_worker(database, "third")
    try:
        for _ in range(5):
            pending = await holder.handler.create(TOOL, ARGS)
            waiter = asyncio.create_task(holder.handler.wait(pending.pending_id, timeout=30))
            won = await asyncio.wait_for(
                asyncio.gather(
                    other.handler.answer(pending.pending_id, "other"),
                    third.handler.decline(pending.pending_id, "third says no"),
                ),
                10,
            )
            assert sorted(won) == [False, True]
            if won[0]:
                assert await asyncio.wait_for(waiter, 10) == "other"
            else:
                with pytest.raises(RuntimeError, match="third says no"):
                    await asyncio.wait_for(waiter, 10)
    finally:
        await third.close()


async def test_the_holder_tells_the_surfaces_once(workers: tuple[Worker, Worker]) -> None:
    holder, other = workers
    pending = await holder.handler.create(TOOL, ARGS)
    assert await other.handler.answer(pending.pending_id, "blue", by="U2") is True
    await holder.handler.drain()
    await other.handler.drain()
    assert endings(holder, other) == [RenderState.COMPLETE]
    assert [u.settled_by for u in holder.heard if u.state is RenderState.COMPLETE] == ["U2"]


async def test_a_worker_that_only_waits_does_not_decide(workers: tuple[Worker, Worker]) -> None:
    """A worker that loaded a request held by a live worker hands its settles over: its
    synchronous resolve() cannot vouch for the outcome and says False; answer() works."""
    holder, other = workers
    pending = await holder.handler.create(TOOL, ARGS)
    waiter = asyncio.create_task(other.handler.wait(pending.pending_id, timeout=30))
    await until_loaded(other, pending.pending_id)
    assert other.handler.resolve(pending.pending_id, "sync") is False
    assert await asyncio.wait_for(other.handler.answer(pending.pending_id, "blue"), 10) is True
    assert await asyncio.wait_for(waiter, 10) == "blue"
    assert await holder.handler.wait(pending.pending_id) == "blue"


async def test_a_dead_holder_does_not_block_answers(
    workers: tuple[Worker, Worker], database: Database
) -> None:
    """A holder cut from the database stops beating; after HOLD seconds the others settle its
    requests themselves, and the holder, unable to vouch for its hold, stops saying True."""
    _, other = workers
    doomed, request_id = await doomed_holder(database)  # its heartbeat stops

    loop = asyncio.get_running_loop()
    start = loop.time()
    assert await asyncio.wait_for(other.handler.answer(request_id, "blue"), 10) is True
    assert loop.time() - start < HOLD * 3
    assert doomed.handler.resolve(request_id, "late") is False
    assert await other.handler.wait(request_id) == "blue"
    await other.handler.drain()
    assert endings(other) == [RenderState.COMPLETE]  # written, and told, by the other worker


async def test_a_request_left_by_a_shutdown_is_taken_by_the_next_waiter(
    workers: tuple[Worker, Worker],
) -> None:
    """A worker shutting down (suspended) lets go of its requests at once: the worker that
    resumes the run holds them, and decides them synchronously."""
    holder, other = workers
    pending = await holder.handler.create(TOOL, ARGS)
    cut = asyncio.create_task(holder.handler.wait(pending.pending_id, timeout=30))
    await asyncio.sleep(0)
    holder.handler.suspend()
    cut.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cut
    await holder.handler.drain()  # the hold is given back

    resumed = asyncio.create_task(other.handler.wait(pending.pending_id, timeout=30))
    for _ in range(100):
        await asyncio.sleep(0.01)
        if other.handler.resolve(pending.pending_id, "blue"):
            break
    else:
        pytest.fail("the resuming worker never held the request")
    assert await asyncio.wait_for(resumed, 10) == "blue"
    record = await holder.store.get_request(pending.pending_id)
    assert record is not None and record.result == "blue"


def heard_first(
    worker: Worker, method: str, monkeypatch: pytest.MonkeyPatch, *, loading: bool = False
) -> list[asyncio.Task[str]]:
    """Make the settle `worker.store.<method>` writes be heard (its NOTIFY, followed) before
    the call returns: what a busy worker's event loop may do when the notification and the
    write's reply arrive together. `loading`: a wait() loads the request (still open) on the
    worker just before the write, after the settle looked for it in memory and did not find
    it; the waits started are returned."""
    write = getattr(worker.store, method)
    waits: list[asyncio.Task[str]] = []

    async def written_then_heard(settlement: Any, *args: Any) -> Any:
        request_id = settlement.request_id
        if loading:
            waits.append(asyncio.create_task(worker.handler.wait(request_id, timeout=30)))
            for _ in range(500):  # loaded in a few round trips; 5 s at most
                if request_id in worker.handler.pending:
                    break
                await asyncio.sleep(0.01)
        outcome = await write(settlement, *args)
        await worker.handler.follow(request_id)
        return outcome

    monkeypatch.setattr(worker.store, method, written_then_heard)
    return waits


@pytest.mark.parametrize("loaded", [True, False], ids=["waited-on-here", "loaded-meanwhile"])
async def test_an_answer_heard_before_its_write_returns_is_still_told_once(
    workers: tuple[Worker, Worker],
    database: Database,
    monkeypatch: pytest.MonkeyPatch,
    loaded: bool,
) -> None:
    """A dead holder's request answered on another worker, whose own NOTIFY of the settle is
    followed before its write returns: the waiter gets the answer and the surfaces are told
    of it once, by the worker that wrote it (else the message keeps its buttons)."""
    _, other = workers
    _, request_id = await doomed_holder(database)
    waits = []
    if loaded:
        waits.append(asyncio.create_task(other.handler.wait(request_id, timeout=30)))
        await until_loaded(other, request_id)  # held by the doomed
    await asyncio.sleep(HOLD * 1.5)  # the doomed's hold lapses: the others settle directly
    started = heard_first(other, "propose", monkeypatch, loading=not loaded)

    assert await asyncio.wait_for(other.handler.answer(request_id, "blue"), 10) is True
    assert [await asyncio.wait_for(w, 10) for w in waits + started] == ["blue"]
    await other.handler.drain()
    assert endings(other) == [RenderState.COMPLETE]


async def test_an_expiry_heard_before_its_write_returns_is_still_told_once(
    workers: tuple[Worker, Worker], database: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dead holder's request whose durable deadline is swept on another worker, as a wait()
    there loads it, the NOTIFY of the expiry followed before the write returns: told once."""
    _, other = workers
    _, request_id = await doomed_holder(database)
    await asyncio.sleep(HOLD * 1.5)
    record = await other.store.get_request(request_id)
    assert record is not None
    waits = heard_first(other, "settle", monkeypatch, loading=True)
    await other.handler.expire_record(record)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(waits[0], 10)
    await other.handler.drain()
    assert endings(other) == [RenderState.EXPIRED]
