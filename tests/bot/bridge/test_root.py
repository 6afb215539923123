"""The Bridge (RoomKit's `kit`): its Quick Start, observers, hooks and durable deadlines."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from bot.agent import AIChannel, AnthropicAIProvider
from bot.agent.hooks import HookContext, HookResult, HookTrigger
from bot.bridge.root import Bridge
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.errors import UnservedToolCallError
from bot.human_input import PendingInputEvent, RenderState, RequestUpdate
from bot.human_tools.tool import BUILTIN_TOOLS, HumanInputToolHandler
from bot.records import RequestRecord, RequestStatus
from tests.bot.conftest import WAIT, StartTurn, Watch, answer_next, within
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use

ASK = "AskUserQuestion"
QUESTION = {"question": "What is your favourite colour?"}


class WebSockets:
    """What RoomKit's `ws_manager` stands for: notifications the app sends to people."""

    def __init__(self) -> None:
        self.sent: asyncio.Queue[tuple[str, dict[str, Any]]] = asyncio.Queue()

    async def notify(self, who: str, message: dict[str, Any]) -> None:
        await self.sent.put((who, message))


@pytest.mark.parametrize("actor", ["alice", None])
async def test_the_seeds_quick_start(
    fake: FakeAnthropic,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    actor: str | None,
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.agent")
    # RoomKit's provider takes no base_url: the SDK reads this one from the environment.
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("Blue, lovely."))
    ws_manager = WebSockets()
    BROADCAST = "*"

    async def my_other_tools(name: str, arguments: dict[str, Any]) -> str:
        raise UnservedToolCallError(name)

    # -- RoomKit's Quick Start, with its imports changed to bot -------------------------
    from bot import (
        AIChannel,
        AITool,
        AnthropicAIProvider,
        HookExecution,
        HookTrigger,
        HumanInputToolHandler,
    )
    from bot import Bridge as RoomKit

    kit = RoomKit()

    # Define which tools need human input
    human = HumanInputToolHandler(
        tool_names={"AskUserQuestion", "ConfirmAction"},
        timeout=300,  # 5 minutes
        # A tool the turn does not offer is dropped before any handler sees it.
        # Declare the definition here, or on the channel via `tools=`.
        tool_definitions=[
            AITool(
                name="AskUserQuestion",
                description="Ask the user a question and wait for the answer.",
                parameters={
                    "type": "object",
                    "properties": {"question": {"type": "string"}},
                    "required": ["question"],
                },
            ),
        ],
    )

    ai = AIChannel(
        "agent",
        provider=AnthropicAIProvider(model="claude-opus-5", api_key="..."),
        system_prompt="You are a helpful assistant. Use AskUserQuestion to ask the user.",
        tool_handler=my_other_tools,  # Your regular tools
        human_input_handler=human,  # Human-input tools
    )

    kit.register_channel(ai)

    # React when the AI asks for human input
    @kit.hook(HookTrigger.ON_USER_INPUT_REQUIRED, execution=HookExecution.SYNC)
    async def notify_user(event, ctx):  # type: ignore[no-untyped-def]  # RoomKit's words
        # Broadcast to frontend via WebSocket, REST, etc.
        # `actor_id` is who to ask: the participant whose turn raised the request.
        # `None` when the turn had no author — see the note below.
        await ws_manager.notify(
            event.actor_id or BROADCAST,
            {
                "type": "question_pending",
                "pending_id": event.pending_id,
                "tool_name": event.tool_name,
                "arguments": event.arguments,
            },
        )

    # -- the conversation the Quick Start serves -----------------------------------------
    turn = asyncio.create_task(ai.respond("room-1", "Pick a colour for me", actor_id=actor))
    who, message = await within(ws_manager.sent.get())
    assert who == (actor or BROADCAST)
    assert message == {
        "type": "question_pending",
        "pending_id": message["pending_id"],
        "tool_name": "AskUserQuestion",
        "arguments": QUESTION,
    }
    pending_id = message["pending_id"]
    assert human.handler.pending[pending_id].actor_id == actor

    # When the user answers (from your REST endpoint, WebSocket handler, etc.)
    human.handler.resolve(pending_id, '{"answer": "blue"}')

    assert await within(turn) == "Blue, lovely."
    first, second = fake.requests
    assert first.body["model"] == "claude-opus-5"
    assert first.tool_names == ["AskUserQuestion"]
    assert first.body["system"].startswith("You are a helpful assistant.")
    assert second.tool_results == [
        # RoomKit declares its own AskUserQuestion by name: the answer reaches it verbatim.
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": '{"answer": "blue"}'}
    ]
    await kit.close()
    assert isinstance(ai.provider, AnthropicAIProvider)
    await ai.provider.close()
    # ConfirmAction is served but never offered: the channel says so, once.
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    [warning] = warnings
    assert "'ConfirmAction'" in warning and "never offers it" in warning


async def test_observers_hear_every_transition_of_every_channel(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    bridge = Bridge()
    early = Watch()
    bridge.add_observer(early)  # before the channels are registered
    patient = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=WAIT)
    hasty = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=0.05)
    slow = AIChannel("slow", provider=provider, human_input_handler=patient)
    quick = AIChannel("quick", provider=provider, human_input_handler=hasty)
    bridge.register_channel(slow)
    bridge.register_channel(quick)
    late = Watch()
    bridge.add_observer(late)  # after

    fake.script(reply_tool_use(ASK, QUESTION, id="t_answered"), reply_text("ok"))
    turn = start(slow.respond("R1", "a", actor_id="U1"))
    await answer_next(patient.handler, late, '{"answer": "blue"}')
    await within(turn)

    fake.script(reply_tool_use(ASK, QUESTION, id="t_rejected"), reply_text("ok"))
    turn = start(slow.respond("R1", "b"))
    update = await late.wait_for(RenderState.EXECUTING, 2)
    assert patient.handler.reject(update.pending_id, "no")
    await within(turn)

    fake.script(reply_tool_use(ASK, QUESTION, id="t_expired"), reply_text("ok"))
    await within(quick.respond("R2", "c"))

    fake.script(reply_tool_use(ASK, QUESTION, id="t_cancelled"))
    turn = start(slow.respond("R3", "d"))
    await late.wait_for(RenderState.EXECUTING, 4)
    turn.cancel()
    await within(late.wait_for(RenderState.CANCELLED))
    await bridge.close()

    expected = {
        "t_answered": [RenderState.COMPLETE],
        "t_rejected": [RenderState.REJECTED],
        "t_expired": [RenderState.EXPIRED],
        "t_cancelled": [RenderState.CANCELLED],
    }
    for seen in (early, late):
        by_call: dict[str, list[RenderState]] = {}
        for u in seen.updates:
            by_call.setdefault(u.tool_call_id, []).append(u.state)
        assert by_call == {
            call: [RenderState.IN_PROGRESS, RenderState.EXECUTING, *end]
            for call, end in expected.items()
        }
    channels = {u.tool_call_id: u.channel_id for u in late.updates}
    assert channels == {
        "t_answered": "slow",
        "t_rejected": "slow",
        "t_expired": "quick",
        "t_cancelled": "slow",
    }
    [complete] = late.of(RenderState.COMPLETE)
    assert (complete.result, complete.actor_id, complete.room_id) == (
        '{"answer":"blue"}',
        "U1",
        "R1",
    )
    assert late.of(RenderState.REJECTED)[0].reason == "no"


class FakeSurface(Watch):
    """A surface (bot/bridge/surfaces.py) that remembers what it was shown and told to say."""

    def __init__(self, name: str, room_prefix: str) -> None:
        super().__init__()
        self.name = name
        self.room_prefix = room_prefix
        self.said: list[tuple[str, str]] = []

    async def observe(self, update: RequestUpdate) -> None:
        await self(update)

    async def say(self, room_id: str, text: str) -> None:
        self.said.append((room_id, text))

    async def find(self, address: Address) -> Addressee:
        """Its own addresses, and the one e-mail address it knows."""
        if address.surface == self.name or address.where == f"someone@{self.name}.example":
            return Addressee(f"{self.room_prefix}{address.where}", address.user)
        raise UnknownAddressError(f"{self.name} does not know {address.where}")


async def test_an_address_is_found_by_its_surface_and_an_email_by_whichever_knows_it() -> None:
    bridge = Bridge()
    bridge.attach(FakeSurface("chat", "chat:"))
    bridge.attach(FakeSurface("board", "board:"))
    found = await bridge.find(Address("board", "B1", "U1"))
    assert found == Addressee("board:B1", "U1")
    email = await bridge.find(Address("email", "someone@board.example"))
    assert email.room_id == "board:someone@board.example"
    with pytest.raises(UnknownAddressError) as unknown:
        await bridge.find(Address("email", "nobody@example.com"))
    assert str(unknown.value) == (
        "chat does not know nobody@example.com; board does not know nobody@example.com"
    )
    with pytest.raises(UnknownAddressError, match="no teams surface is served"):
        await bridge.find(Address("teams", "19:x"))


async def test_an_attached_surface_hears_its_own_rooms_and_those_mirrored_to_them(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    bridge = Bridge()
    human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=WAIT)
    channel = AIChannel("agent", provider=provider, human_input_handler=human)
    bridge.register_channel(channel)
    chat, board = FakeSurface("chat", "chat:"), FakeSurface("board", "board:")
    bridge.attach(chat)
    bridge.attach(board)
    bridge.mirror(lambda u: ["board:approvals"] if u.room_id.startswith("chat:") else [])
    everything = Watch()
    bridge.add_observer(everything)

    fake.script(reply_tool_use(ASK, QUESTION, id="t_chat"), reply_text("ok"))
    turn = start(channel.respond("chat:R1", "a", actor_id="U1"))
    await answer_next(human.handler, chat, '{"answer": "blue"}')
    await within(turn)
    fake.script(reply_tool_use(ASK, QUESTION, id="t_nobody"), reply_text("ok"))
    turn = start(channel.respond("elsewhere:R2", "b", actor_id="U1"))
    # `everything` heard the first request twice: in its room, and mirrored.
    await answer_next(human.handler, everything, '{"answer": "red"}', count=3)
    await within(turn)
    await bridge.close()

    shown = [RenderState.IN_PROGRESS, RenderState.EXECUTING, RenderState.COMPLETE]
    assert [(u.tool_call_id, u.room_id) for u in chat.updates] == [("t_chat", "chat:R1")] * 3
    assert chat.states() == shown
    assert [(u.tool_call_id, u.room_id) for u in board.updates] == [
        ("t_chat", "board:approvals")
    ] * 3
    assert bridge.surface_for("board:approvals") is board
    assert bridge.surface_for("elsewhere:R2") is None


@pytest.mark.parametrize(("name", "prefix"), [("chat", "talk:"), ("talk", "chat:R"), ("t", "c")])
def test_two_surfaces_cannot_claim_one_room(name: str, prefix: str) -> None:
    bridge = Bridge()
    bridge.attach(FakeSurface("chat", "chat:"))
    with pytest.raises(ValueError, match="clashes with the attached 'chat'"):
        bridge.attach(FakeSurface(name, prefix))


async def test_hooks_that_fail_or_hang_do_not_deny(
    fake: FakeAnthropic,
    provider: AnthropicAIProvider,
    start: StartTurn,
    caplog: pytest.LogCaptureFixture,
) -> None:
    bridge = Bridge(hook_budget=0.05)
    human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=WAIT)
    ai = AIChannel("agent", provider=provider, human_input_handler=human)
    bridge.register_channel(ai)
    seen = Watch()
    bridge.add_observer(seen)
    ran: list[str] = []
    hang_ended = asyncio.Event()

    @bridge.hook(HookTrigger.ON_USER_INPUT_REQUIRED, priority=1)
    async def crashes(event: PendingInputEvent, context: HookContext) -> HookResult:
        ran.append("crashes")
        raise RuntimeError("websocket gone")

    @bridge.hook(HookTrigger.ON_USER_INPUT_REQUIRED, priority=2)
    async def hangs(event: PendingInputEvent, context: HookContext) -> HookResult:
        ran.append("hangs")
        try:
            await asyncio.Event().wait()
        finally:
            hang_ended.set()
        return HookResult.block("unreachable")

    fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("Thanks."))
    turn = start(ai.respond("R1", "Pick"))
    update = await seen.wait_for(RenderState.EXECUTING)
    await within(hang_ended.wait())  # cut at the budget
    await within(human.handler.drain())  # the notifier has given its verdict
    assert ran == ["crashes", "hangs"]
    assert update.pending_id in human.handler.pending  # not denied
    assert human.handler.resolve(update.pending_id, '{"answer": "blue"}')
    assert await within(turn) == "Thanks."
    failures = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert any("crashes" in m for m in failures) and any("hangs" in m for m in failures)
    await bridge.close()


async def test_an_answer_is_taken_while_the_notification_is_still_running(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    bridge = Bridge()
    human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=WAIT)
    ai = AIChannel("agent", provider=provider, human_input_handler=human)
    bridge.register_channel(ai)
    broadcasting = asyncio.Event()
    broadcast_done = asyncio.Event()
    seen_events: list[PendingInputEvent] = []

    @bridge.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def slow_broadcast(event: PendingInputEvent, context: HookContext) -> None:
        seen_events.append(event)
        assert (context.room_id, context.channel_id) == ("R1", "agent")
        broadcasting.set()
        await broadcast_done.wait()

    fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("Thanks."))
    turn = start(ai.respond("R1", "Pick", actor_id="U1"))
    await within(broadcasting.wait())
    [event] = seen_events
    assert (event.tool_name, event.arguments, event.tool_call_id) == (ASK, QUESTION, "toolu_1")
    assert (event.actor_id, event.channel_type, event.channel_id) == ("U1", "ai", "agent")
    assert human.handler.resolve(event.pending_id, '{"answer": "blue"}')
    assert await within(turn) == "Thanks."
    broadcast_done.set()
    await bridge.close()


async def test_start_expires_a_request_whose_deadline_passed_while_down(
    provider: AnthropicAIProvider, sqlite_url: str
) -> None:
    from bot.store import open_store

    store = await open_store(sqlite_url)
    try:
        bridge = Bridge(store=store)
        human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=300)
        bridge.register_channel(AIChannel("agent", provider=provider, human_input_handler=human))
        seen = Watch()
        bridge.add_observer(seen)
        assert human.handler.store is store

        now = datetime.now(UTC)
        await store.create_request(
            RequestRecord(
                id="req-overdue",
                tool_name=ASK,
                arguments=QUESTION,
                room_id="R1",
                tool_call_id="toolu_old",
                channel_id="agent",
                channel_type="ai",
                actor_id="U1",
                detached=False,
                created_at=now - timedelta(minutes=10),
                expires_at=now - timedelta(minutes=5),
            )
        )
        await bridge.start()
        expired = await seen.wait_for(RenderState.EXPIRED)
        assert (expired.pending_id, expired.tool_call_id, expired.actor_id) == (
            "req-overdue",
            "toolu_old",
            "U1",
        )
        timed_out = "Human input timed out after 300s for tool 'AskUserQuestion'"
        assert expired.reason == timed_out
        record = await store.get_request("req-overdue")
        assert record is not None
        assert (record.status, record.reason) == (RequestStatus.TIMED_OUT, timed_out)
        assert await human.handler.answer("req-overdue", '{"answer": "too late"}') is False
        await bridge.close()
        assert seen.states() == [RenderState.EXPIRED]
    finally:
        await store.close()


async def test_with_a_store_a_request_and_its_answer_are_rows(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn, sqlite_url: str
) -> None:
    from bot.store import open_store

    store = await open_store(sqlite_url)
    try:
        bridge = Bridge(store=store)
        human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=WAIT)
        ai = AIChannel("agent", provider=provider, human_input_handler=human)
        bridge.register_channel(ai)
        assert ai.store is store
        seen = Watch()
        bridge.add_observer(seen)
        await bridge.start()

        fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("Thanks."))
        turn = start(ai.respond("R1", "Pick", actor_id="U1"))
        update = await seen.wait_for(RenderState.EXECUTING)
        row = await store.get_request(update.pending_id)
        assert row is not None
        assert (row.status, row.actor_id, row.tool_call_id) == (
            RequestStatus.PENDING,
            "U1",
            "toolu_1",
        )
        assert human.handler.resolve(update.pending_id, '{"answer": "blue"}', by="U1")
        assert await within(turn) == "Thanks."
        await bridge.close()
        row = await store.get_request(update.pending_id)
        assert row is not None
        assert (row.status, row.result, row.settled_by) == (
            RequestStatus.RESOLVED,
            '{"answer":"blue"}',
            "U1",
        )
        assert fake.requests[-1].tool_results[0]["content"] == '{"answer":"blue"}'
    finally:
        await store.close()
