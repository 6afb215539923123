"""Fixtures for the core's tests: the fake Messages API, a provider on it, request watchers.

Everything runs over loopback through the real `anthropic` SDK; nothing of ours is mocked.
Waiting is event-driven: a `Watch` hears a handler's transitions as an observer, and a test
awaits the state it needs (bounded by a short timeout so a broken test fails, never hangs).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from bot.agent import AnthropicAIProvider
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.store import SqlStore, open_store
from tests.fakes.anthropic_api import FakeAnthropic

MODEL = "claude-sonnet-4-6"  # not deprecated: the SDK warns (an error here) for 4-5
WAIT = 2.0  # upper bound for an event a test awaits; only a broken test ever reaches it

T = TypeVar("T")


class Watch:
    """Every update a handler reports, in order; await the next one of a given state."""

    def __init__(self) -> None:
        self.updates: list[RequestUpdate] = []
        self._changed = asyncio.Condition()

    async def __call__(self, update: RequestUpdate) -> None:
        async with self._changed:
            self.updates.append(update)
            self._changed.notify_all()

    def states(self, pending_id: str | None = None) -> list[RenderState]:
        return [u.state for u in self.updates if pending_id in (None, u.pending_id)]

    def of(self, state: RenderState) -> list[RequestUpdate]:
        return [u for u in self.updates if u.state is state]

    async def wait_for(self, state: RenderState, count: int = 1) -> RequestUpdate:
        """The `count`-th update in `state`, once it has arrived."""
        async with asyncio.timeout(WAIT), self._changed:
            await self._changed.wait_for(lambda: len(self.of(state)) >= count)
            return self.of(state)[count - 1]


def watch(handler: HumanInputHandler) -> Watch:
    """A `Watch` observing `handler` from now on."""
    seen = Watch()
    handler.add_observer(seen)
    return seen


async def answer_next(
    handler: HumanInputHandler, seen: Watch, answer: str, *, count: int = 1
) -> RequestUpdate:
    """Wait for the `count`-th request to be executing, then resolve it with `answer`."""
    update = await seen.wait_for(RenderState.EXECUTING, count)
    assert handler.resolve(update.pending_id, answer)
    return update


async def within(awaitable: Awaitable[T]) -> T:
    """Await something the test expects to finish promptly."""
    async with asyncio.timeout(WAIT):
        return await awaitable


@pytest.fixture
async def fake() -> AsyncIterator[FakeAnthropic]:
    async with FakeAnthropic() as running:
        yield running


@pytest.fixture
async def provider(fake: FakeAnthropic) -> AsyncIterator[AnthropicAIProvider]:
    client = AnthropicAIProvider(MODEL, api_key="test", base_url=fake.base_url, max_retries=0)
    try:
        yield client
    finally:
        await client.close()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"


@pytest.fixture
async def sqlite_store(sqlite_url: str) -> AsyncIterator[SqlStore]:
    """A store on a fresh SQLite file, migrated; closed at the end."""
    opened = await open_store(sqlite_url)
    try:
        yield opened
    finally:
        await opened.close()


StartTurn = Callable[[Coroutine[Any, Any, str]], "asyncio.Task[str]"]


@pytest.fixture
async def start() -> AsyncIterator[StartTurn]:
    """Run a turn as a task; any still running at the end are cancelled and awaited."""
    tasks: list[asyncio.Task[str]] = []

    def run(turn: Coroutine[Any, Any, str]) -> asyncio.Task[str]:
        task = asyncio.create_task(turn)
        tasks.append(task)
        return task

    yield run
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def settle_loop(rounds: int = 5) -> None:
    """Let scheduled callbacks and tasks run (no wall-clock waiting)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


@pytest.fixture
async def handler() -> AsyncIterator[HumanInputHandler]:
    """An in-memory handler; whatever a test left pending must drain at its end."""
    made = HumanInputHandler()
    yield made
    await asyncio.wait_for(made.drain(), 2.0)
