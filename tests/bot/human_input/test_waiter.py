"""wait() returns a coroutine written out by hand (bot/human_input/waiter.py), which is what a
blocked wait costs (bench/human_input_bench.py, (c)): it does what an `async def` does under
every asyncio entry point, with cancellation, contexts and misuse.
"""

from __future__ import annotations

import asyncio
import contextvars
import gc
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.errors import HumanInputRejectedError
from bot.human_input import HumanInputHandler, PendingInputStatus
from bot.store import SqlStore, open_store
from tests.bot.conftest import settle_loop

TOOL = "AskUserQuestion"
ARGS: dict[str, Any] = {"question": "Which colour?"}


# -- wait() is a coroutine ---------------------------------------------------------------------


async def test_wait_does_nothing_until_awaited_and_is_awaited_once(
    handler: HumanInputHandler,
) -> None:
    unknown = handler.wait("no-such-id")  # an async def raises only once awaited: so does this
    assert asyncio.iscoroutine(unknown)
    with pytest.raises(ValueError, match="Unknown human input request: no-such-id"):
        await unknown
    with pytest.raises(RuntimeError, match="cannot reuse already awaited coroutine"):
        await unknown

    pending = await handler.create(TOOL, ARGS)
    handler.resolve(pending.pending_id, "blue")
    answered = handler.wait(pending.pending_id)
    assert await answered == "blue"
    with pytest.raises(RuntimeError):
        await answered


async def test_every_asyncio_entry_point_runs_a_wait(handler: HumanInputHandler) -> None:
    """create_task, ensure_future, gather, wait_for, shield, asyncio.timeout, a plain await:
    none may take the wait for a future it should await rather than run."""
    pending = await handler.create(TOOL, ARGS, timeout=30)
    pid = pending.pending_id

    async def awaited() -> str:
        return await handler.wait(pid)

    async def in_timeout() -> str:
        async with asyncio.timeout(30):
            return await handler.wait(pid)

    waiters: list[asyncio.Future[Any]] = [
        asyncio.create_task(handler.wait(pid)),
        asyncio.ensure_future(handler.wait(pid)),
        asyncio.gather(handler.wait(pid), handler.wait(pid)),
        asyncio.ensure_future(asyncio.wait_for(handler.wait(pid), 30)),
        asyncio.ensure_future(asyncio.shield(handler.wait(pid))),
        asyncio.create_task(in_timeout()),
        asyncio.create_task(awaited()),
    ]
    await settle_loop()
    assert not any(waiter.done() for waiter in waiters)
    assert handler.resolve(pid, "blue") is True
    results = await asyncio.wait_for(asyncio.gather(*waiters), 2.0)
    assert results == ["blue", "blue", ["blue", "blue"], "blue", "blue", "blue", "blue"]


async def test_a_woken_wait_runs_on_in_its_task_s_context(handler: HumanInputHandler) -> None:
    turn: contextvars.ContextVar[str] = contextvars.ContextVar("turn", default="none")
    pending = await handler.create(TOOL, ARGS)

    async def waiter(name: str) -> tuple[str, str]:
        turn.set(name)
        answer = await handler.wait(pending.pending_id)
        return answer, turn.get()

    one, two = asyncio.create_task(waiter("one")), asyncio.create_task(waiter("two"))
    await settle_loop()
    handler.resolve(pending.pending_id, "blue")
    assert await one == ("blue", "one")
    assert await two == ("blue", "two")


async def test_a_finished_wait_holds_nothing_of_its_request(handler: HumanInputHandler) -> None:
    """A task keeps its coroutine once done; a finished async def frame keeps no locals, and
    neither does a finished wait(), answered, refused, replayed or cancelled."""
    pending = await handler.create(TOOL, ARGS)
    answered = asyncio.create_task(handler.wait(pending.pending_id))
    replayed = asyncio.create_task(handler.wait(pending.pending_id))
    await settle_loop()
    handler.resolve(pending.pending_id, "blue")
    refused = await handler.create(TOOL, ARGS)
    handler.reject(refused.pending_id, "no")
    cut = await handler.create(TOOL, ARGS)
    cancelled = asyncio.create_task(handler.wait(cut.pending_id))
    await settle_loop()
    cancelled.cancel()
    tasks = [answered, replayed, asyncio.create_task(handler.wait(refused.pending_id)), cancelled]
    await asyncio.gather(*tasks, return_exceptions=True)
    coroutines = {id(task.get_coro()) for task in tasks}
    for request in (pending, refused, cut):
        assert not [r for r in gc.get_referrers(request) if id(r) in coroutines]


async def test_a_closed_wait_that_never_ran_leaves_the_request_alone(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)
    handler.wait(pending.pending_id).close()
    assert pending.pending_id in handler.pending
    assert handler.resolve(pending.pending_id, "blue") is True
    assert await handler.wait(pending.pending_id) == "blue"


async def test_a_cancel_message_reaches_the_cancelled_waiter(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await settle_loop()
    waiter.cancel("the turn was cut")
    with pytest.raises(asyncio.CancelledError) as cancelled:
        await waiter
    assert cancelled.value.args == ("the turn was cut",)
    assert pending.status is PendingInputStatus.CANCELLED
    assert handler.resolve(pending.pending_id, "late") is False


async def test_a_task_cancelled_after_its_answer_came_is_cancelled_and_the_answer_kept(
    handler: HumanInputHandler,
) -> None:
    """The answer is recorded (resolve said True), the task is cut before it ran: the task
    is cancelled, as it would be on a future, and the answer is replayed to a later wait."""
    pending = await handler.create(TOOL, ARGS)
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    await settle_loop()
    assert handler.resolve(pending.pending_id, "blue") is True
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    assert pending.status is PendingInputStatus.RESOLVED
    assert await handler.wait(pending.pending_id) == "blue"


async def test_a_task_cancelled_before_its_first_step_never_waits(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)
    waiter = asyncio.create_task(handler.wait(pending.pending_id))
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    # It never blocked on the request, so it withdrew nothing.
    assert pending.pending_id in handler.pending
    assert handler.reject(pending.pending_id, "no") is True
    with pytest.raises(HumanInputRejectedError, match="no"):
        await handler.wait(pending.pending_id)


async def test_an_outer_timeout_cancels_a_wait_nested_in_coroutines(
    handler: HumanInputHandler,
) -> None:
    pending = await handler.create(TOOL, ARGS)

    async def inner() -> str:
        return await handler.wait(pending.pending_id, timeout=30)

    async def outer() -> str:
        return await inner()

    with pytest.raises(TimeoutError):
        async with asyncio.timeout(0.05):
            await outer()
    assert pending.status is PendingInputStatus.CANCELLED
    assert handler.resolve(pending.pending_id, "late") is False


# -- a request only the store knows ---------------------------------------------------------------


@pytest.fixture
async def stores(tmp_path: Path) -> AsyncIterator[list[SqlStore]]:
    url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
    first = await open_store(url)
    second = await open_store(url, migrate=False)
    yield [first, second]
    await first.close()
    await second.close()


async def test_a_wait_loading_a_stored_request_can_be_cancelled(stores: list[SqlStore]) -> None:
    """Cut while it loads the request (in memory, its hold being taken), the wait withdraws
    it as a wait cut once blocked does: a late answer is not taken."""
    creator, reader = (HumanInputHandler(store=store, hold_seconds=0.4) for store in stores)
    pending = await creator.create(TOOL, ARGS)
    waiter = asyncio.create_task(reader.wait(pending.pending_id, timeout=30))

    async def loaded() -> None:
        # In memory once its row is read (a thread's work: no event to wait on), then cut
        # while its hold is being taken.
        while pending.pending_id not in reader.pending:  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    await asyncio.wait_for(loaded(), 5)
    await asyncio.sleep(0)
    assert not waiter.done()
    waiter.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiter
    await asyncio.wait_for(reader.drain(), 5)
    record = await stores[0].get_request(pending.pending_id)
    assert record is not None and record.status is PendingInputStatus.CANCELLED
    await creator.close()
    await reader.close()
