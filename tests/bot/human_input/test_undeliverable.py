"""A request no surface could show settles as undeliverable at once: the model reads that the
person could not be reached (not that they did not answer), and the store says why.

A surface says so by raising UndeliverableError from `observe` for the request's own room; a
copy of it that could not be shown in a mirrored room changes nothing.
"""

from __future__ import annotations

import json

import pytest

from bot.agent import AIChannel, AnthropicAIProvider
from bot.bridge.root import Bridge
from bot.doors.addresses import Address, Addressee
from bot.errors import UndeliverableError
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.human_tools.tool import BUILTIN_TOOLS, HumanInputToolHandler
from bot.records import RequestStatus
from bot.requests.view import build_view
from bot.store import open_store
from tests.bot.conftest import WAIT, StartTurn, Watch, answer_next, watch, within
from tests.fakes.anthropic_api import FakeAnthropic, reply_text, reply_tool_use

ASK = "AskUserQuestion"
QUESTION = {"question": "Which region first?"}
WHY = "Slack chat.postMessage failed: channel_not_found"
DEADLINE = 60.0  # the requests below settle long before this: `within` allows WAIT


class RefusingSurface(Watch):
    """A surface whose platform refuses to show new requests."""

    def __init__(self, name: str, room_prefix: str, *, refuses: bool) -> None:
        super().__init__()
        self.name = name
        self.room_prefix = room_prefix
        self.refuses = refuses

    async def observe(self, update: RequestUpdate) -> None:
        await self(update)
        if self.refuses and update.state is RenderState.EXECUTING:
            raise UndeliverableError(WHY)

    async def say(self, room_id: str, text: str) -> None:
        return None

    async def find(self, address: Address) -> Addressee:
        return Addressee(f"{self.room_prefix}{address.where}", address.user)


def bridge_with(
    provider: AnthropicAIProvider, *surfaces: RefusingSurface
) -> tuple[Bridge, AIChannel]:
    bridge = Bridge()
    human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=DEADLINE)
    channel = AIChannel("agent", provider=provider, human_input_handler=human)
    bridge.register_channel(channel)
    for surface in surfaces:
        bridge.attach(surface)
    bridge.mirror(lambda u: ["board:approvals"] if u.room_id.startswith("chat:") else [])
    return bridge, channel


async def test_a_request_its_room_cannot_show_is_undeliverable_at_once(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    chat = RefusingSurface("chat", "chat:", refuses=True)
    board = RefusingSurface("board", "board:", refuses=False)
    bridge, channel = bridge_with(provider, chat, board)
    fake.script(reply_tool_use(ASK, QUESTION, id="t1"), reply_text("I could not reach you."))

    assert await within(channel.respond("chat:R1", "go", actor_id="U1")) == (
        "I could not reach you."
    )
    await bridge.close()

    (result,) = fake.requests[-1].tool_results
    assert result["is_error"] is True
    error = json.loads(result["content"])["error"]
    assert error.startswith("The person could not be reached: " + WHY)
    assert "timed out" not in error
    # Every room is told, the mirror included: its copy must not keep live controls.
    for surface in (chat, board):
        ending = await surface.wait_for(RenderState.UNDELIVERABLE)
        assert ending.reason == WHY
        view = build_view(ending, BUILTIN_TOOLS[ASK])
        assert not view.live
        assert view.status.plain == f"Could not be delivered: {WHY}."


async def test_a_mirror_that_cannot_show_it_changes_nothing(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    chat = RefusingSurface("chat", "chat:", refuses=False)
    board = RefusingSurface("board", "board:", refuses=True)
    bridge, channel = bridge_with(provider, chat, board)
    handler = channel.human_input_handler
    assert handler is not None
    fake.script(reply_tool_use(ASK, QUESTION, id="t1"), reply_text("Thanks."))

    turn = start(channel.respond("chat:R1", "go", actor_id="U1"))
    await answer_next(handler.handler, chat, '{"answer": "eu-west"}')
    assert await within(turn) == "Thanks."
    await bridge.close()
    assert RenderState.UNDELIVERABLE not in chat.states() + board.states()


async def test_undeliverable_is_one_audited_compare_and_set(sqlite_url: str) -> None:
    store = await open_store(sqlite_url)
    try:
        handler = HumanInputHandler(store=store)
        seen = watch(handler)
        request = await handler.create(ASK, QUESTION, room_id="chat:R1", timeout=DEADLINE)
        assert await handler.undeliverable(request.id, WHY)
        assert not await handler.undeliverable(request.id, "again")  # settled once
        assert not handler.resolve(request.id, '{"answer": "too late"}')
        with pytest.raises(UndeliverableError, match="channel_not_found"):
            await within(handler.wait(request.id, timeout=WAIT))
        assert (await seen.wait_for(RenderState.UNDELIVERABLE)).reason == WHY

        row = await store.get_request(request.id)
        assert row is not None
        assert (row.status, row.reason) == (RequestStatus.UNDELIVERABLE, WHY)
        (audit, _created) = await store.list_audit(request_id=request.id)
        assert (audit.action, audit.detail) == ("request.undeliverable", {"reason": WHY})
        await handler.drain()
    finally:
        await store.close()


async def test_a_copy_that_cannot_be_shown_is_audited_and_the_request_stays(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn, sqlite_url: str
) -> None:
    """The rooms of the copies are asked once per update (an async mirror, say a policy's
    `deliver` looking rooms up), whichever surfaces listen; each copy is flagged as one; a
    copy refused is an `undeliverable_copy` audit line, never the request's end."""
    store = await open_store(sqlite_url)
    try:
        chat = RefusingSurface("chat", "chat:", refuses=False)
        board = RefusingSurface("board", "board:", refuses=True)
        bridge = Bridge(store=store)
        human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=DEADLINE)
        channel = AIChannel("agent", provider=provider, human_input_handler=human)
        bridge.register_channel(channel)
        bridge.attach(chat)
        bridge.attach(board)
        asked: list[RenderState] = []

        async def copies(update: RequestUpdate) -> list[str]:
            asked.append(update.state)
            return ["board:approvals", update.room_id]  # its own room is never a copy

        bridge.mirror(copies)
        fake.script(reply_tool_use(ASK, QUESTION, id="t1"), reply_text("Thanks."))
        turn = start(channel.respond("chat:R1", "go", actor_id="U1"))
        request = await answer_next(human.handler, chat, '{"answer": "eu-west"}')
        assert await within(turn) == "Thanks."
        await bridge.close()

        assert asked == [RenderState.IN_PROGRESS, RenderState.EXECUTING, RenderState.COMPLETE]
        assert [u.copy for u in chat.updates] == [False] * 3
        assert [(u.room_id, u.copy) for u in board.updates] == [("board:approvals", True)] * 3
        audit = await store.list_audit(request_id=request.pending_id)
        (copy,) = [entry for entry in audit if entry.action == "undeliverable_copy"]
        assert copy.detail == {"room": "board:approvals", "reason": WHY}
        record = await store.get_request(request.pending_id)
        assert record is not None and record.status is RequestStatus.RESOLVED
    finally:
        await store.close()
