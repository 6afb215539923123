"""Turns: a turn watched live ends once, and the people it concerns may stop it."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from bot.agent import AIChannel, AnthropicAIProvider
from bot.agent.steps import ToolStep
from bot.bridge.turns import TURN_STOPPED, StopResult, Turns
from bot.bridge.watches import Ending, TurnEnd, Watches
from bot.durable.leases import RunLeases
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.human_tools.tool import HumanInputToolHandler
from bot.records import RequestStatus
from bot.requests.access import AnswerPolicy
from bot.requests.router import Router
from bot.store import SqlStore
from tests.bot.conftest import watch, within
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use

ACTOR, STRANGER, APPROVER, ADMIN = "U0ACTOR01", "U0STRANGE", "U0APPROVE", "U0ADMIN01"
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
ROOM = "slack:C1:1.0"


class Watched:
    """A TurnWatch: the steps it was told, and the end."""

    def __init__(self) -> None:
        self.steps: list[str] = []
        self.end: asyncio.Future[TurnEnd] = asyncio.get_running_loop().create_future()

    def thinking(self) -> None:
        self.steps.append("thinking")

    def text(self, delta: str) -> None:
        self.steps.append("text")

    def discarded(self) -> None:
        self.steps.append("discarded")

    def tool_started(self, step: ToolStep) -> None:
        self.steps.append(f"started {step.name}")

    def tool_finished(self, step: ToolStep) -> None:
        self.steps.append(f"finished {step.name}")

    def request_changed(self, update: RequestUpdate) -> None:
        self.steps.append(f"request {update.state.value}")

    async def ended(self, end: TurnEnd) -> None:
        self.end.set_result(end)


@pytest.fixture
def human(sqlite_store: SqlStore) -> HumanInputToolHandler:
    return HumanInputToolHandler.builtin(handler=HumanInputHandler(store=sqlite_store))


@pytest.fixture
async def turns(
    sqlite_store: SqlStore, human: HumanInputToolHandler, provider: AnthropicAIProvider
) -> AsyncIterator[Turns]:
    router = Router(
        store=sqlite_store,
        handler_for=lambda channel: human.handler,
        policy=AnswerPolicy(approvers=frozenset({APPROVER}), admins=frozenset({ADMIN})),
        tools=human.tools,
    )
    made = Turns(AIChannel("agent", provider=provider, human_input_handler=human), router)
    yield made
    await made.close()


async def said(text: str) -> None:
    return None


async def _waiting_turn(
    fake: FakeAnthropic, human: HumanInputToolHandler, turns: Turns
) -> tuple[Watched, str]:
    fake.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_1"), reply_text("Done."))
    seen, watched = watch(human.handler), Watched()
    human.handler.add_observer(_told(turns))
    turns.start(ROOM, ACTOR, "deploy please", said, Watches(watched))
    update = await seen.wait_for(RenderState.EXECUTING)
    assert f"request {RenderState.EXECUTING.value}" in watched.steps
    return watched, update.pending_id


def _told(turns: Turns) -> Callable[[RequestUpdate], Awaitable[None]]:
    """What a surface does with every request update it observes: tell the room's turn."""

    async def observe(update: RequestUpdate) -> None:
        turns.request_changed(update)

    return observe


async def test_a_finished_turn_is_told_its_end(
    fake: FakeAnthropic, human: HumanInputToolHandler, turns: Turns
) -> None:
    fake.script(reply_text("Hello there."))
    watched = Watched()
    turns.start(ROOM, ACTOR, "hi", said, watched)
    assert await within(watched.end) == TurnEnd(Ending.FINISHED)
    assert watched.steps[:2] == ["thinking", "text"]
    assert turns.running(ROOM) is None


async def test_the_turns_person_stops_it_and_its_request_is_withdrawn(
    fake: FakeAnthropic, human: HumanInputToolHandler, turns: Turns, sqlite_store: SqlStore
) -> None:
    watched, request_id = await _waiting_turn(fake, human, turns)
    assert await turns.stop(ROOM, ACTOR, "Alice Able") is StopResult.STOPPED
    assert await within(watched.end) == TurnEnd(Ending.STOPPED, ACTOR)
    record = await sqlite_store.get_request(request_id)
    assert record is not None and record.status is RequestStatus.CANCELLED
    assert record.settled_by == ACTOR and record.reason == "Stopped by Alice Able"
    [audit] = await sqlite_store.list_audit(actor_id=ACTOR, limit=1)
    assert (audit.action, audit.detail["room_id"]) == (TURN_STOPPED, ROOM)
    assert "finished requestApproval" in watched.steps
    assert turns.running(ROOM) is None
    assert len(fake.requests) == 1  # halted: the model is asked nothing after the stop


@pytest.mark.parametrize("who", [APPROVER, ADMIN])
async def test_an_approver_or_an_admin_may_stop_it(
    fake: FakeAnthropic, human: HumanInputToolHandler, turns: Turns, who: str
) -> None:
    watched, _ = await _waiting_turn(fake, human, turns)
    assert await turns.stop(ROOM, who) is StopResult.STOPPED
    assert await within(watched.end) == TurnEnd(Ending.STOPPED, who)


async def test_a_stranger_may_not_stop_it_and_it_goes_on(
    fake: FakeAnthropic, human: HumanInputToolHandler, turns: Turns, sqlite_store: SqlStore
) -> None:
    watched, request_id = await _waiting_turn(fake, human, turns)
    assert await turns.stop(ROOM, STRANGER) is StopResult.NOT_YOURS
    assert await turns.stop("slack:C1:2.0", ACTOR) is StopResult.NOT_RUNNING
    assert human.handler.resolve(request_id, '{"approved": true}')
    assert await within(watched.end) == TurnEnd(Ending.FINISHED)
    assert await sqlite_store.list_audit(actor_id=STRANGER) == []


async def test_a_stop_asked_on_another_worker_stops_the_turn_where_it_runs(
    fake: FakeAnthropic,
    human: HumanInputToolHandler,
    sqlite_store: SqlStore,
    provider: AnthropicAIProvider,
) -> None:
    """Worker B is asked to stop a turn worker A runs: B writes the ask on the run's row; A
    reads it at its next lease renewal, withdraws the request and cuts the turn."""
    router = Router(
        store=sqlite_store, handler_for=lambda channel: human.handler, tools=human.tools
    )
    workers: list[Turns] = []
    for name in ("A", "B"):
        runs = RunLeases(sqlite_store, worker_id=name, lease_seconds=0.3)
        runs.start()
        channel = AIChannel("agent", provider=provider, human_input_handler=human, runs=runs)
        workers.append(Turns(channel, router))
    a, b = workers
    try:
        watched, request_id = await _waiting_turn(fake, human, a)
        assert await b.runs_in("slack:C1:") == {ROOM: ACTOR}  # A's, seen from B
        assert await b.runs_in("slack:C_:") == {}  # a prefix, not a LIKE pattern
        assert await b.stop(ROOM, ACTOR, "Alice Able") is StopResult.ASKED
        assert await within(watched.end) == TurnEnd(Ending.STOPPED, ACTOR)
        record = await sqlite_store.get_request(request_id)
        assert record is not None and record.reason == "Stopped by Alice Able"
        assert len(fake.requests) == 1
        assert (
            await sqlite_store.active_run(ROOM, "agent") is None
        )  # ended, the ask cleared with it
        assert await b.stop(ROOM, ACTOR) is StopResult.NOT_RUNNING
    finally:
        for turns in workers:
            await turns.close()
            assert turns.channel.runs is not None
            await turns.channel.runs.stop()


async def test_a_shutdown_tells_the_watch_and_leaves_the_run_for_another_worker(
    fake: FakeAnthropic, human: HumanInputToolHandler, turns: Turns, sqlite_store: SqlStore
) -> None:
    watched, request_id = await _waiting_turn(fake, human, turns)
    turns.channel.suspended = True  # what Bridge.suspend() sets at a shutdown
    human.handler.suspend()
    await turns.close()
    assert await within(watched.end) == TurnEnd(Ending.SUSPENDED)
    record = await sqlite_store.get_request(request_id)
    assert record is not None and record.status is RequestStatus.PENDING  # for a resume


async def test_a_stop_ends_the_turn_and_those_waiting_for_the_room(
    fake: FakeAnthropic, human: HumanInputToolHandler, turns: Turns
) -> None:
    first, _ = await _waiting_turn(fake, human, turns)
    second = Watched()
    turns.start(ROOM, ACTOR, "and then this", said, second)  # waits for the room
    running = turns.running(ROOM)
    assert running is not None and running.watch is not second  # the first runs
    assert await turns.stop(ROOM, ACTOR) is StopResult.STOPPED
    assert await within(first.end) == TurnEnd(Ending.STOPPED, ACTOR)
    assert await within(second.end) == TurnEnd(Ending.STOPPED, ACTOR)
    assert second.steps == []  # never ran
    assert len(fake.requests) == 1 and turns.running(ROOM) is None
