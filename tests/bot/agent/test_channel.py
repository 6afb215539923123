"""The tool loop through the real anthropic SDK, streamed from FakeAnthropic on loopback."""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from typing import Any, cast

import anthropic
import pytest

from bot.agent import INTERRUPTED, AIChannel, AnthropicAIProvider
from bot.agent.hooks import HookContext, HookResult, HookTrigger, ToolCallEvent
from bot.bridge.root import Bridge
from bot.errors import ToolFailedError, UnservedToolCallError
from bot.human_input import RenderState
from bot.human_tools.tool import BUILTIN_TOOLS, HumanInputToolHandler
from bot.tools import AITool
from bot.tools.context import current_tool_actor_id
from tests.bot.conftest import WAIT, StartTurn, Watch, answer_next, watch, within
from tests.fakes.anthropic_api import (
    FakeAnthropic,
    Turn,
    reply,
    reply_text,
    reply_tool_use,
    stream_events,
    text_block,
    tool_use_block,
)

ASK = "AskUserQuestion"
QUESTION = {"question": "What is your favourite colour?"}
LOOKUP = AITool(
    "lookup",
    "Look a word up.",
    {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
)
EXPLODE = AITool("explode", "Always fails.")
BROKEN = AITool("broken", "Fails as a tool.")


async def tools(name: str, arguments: dict[str, Any]) -> str:
    """The host's ordinary tools."""
    if name == "lookup":
        return f"found {arguments['q']}"
    if name == "explode":
        raise ValueError("password hunter2 leaked in the message")
    if name == "broken":
        raise ToolFailedError("disk full")
    raise UnservedToolCallError(name)


def asker(timeout: float = WAIT) -> HumanInputToolHandler:
    """AskUserQuestion, offered and served."""
    return HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=timeout)


def channel(provider: AnthropicAIProvider, human: HumanInputToolHandler, **kw: Any) -> AIChannel:
    return AIChannel(
        "agent",
        provider=provider,
        system_prompt="Ask when unsure.",
        tool_handler=tools,
        human_input_handler=human,
        tools=[LOOKUP, EXPLODE, BROKEN],
        **kw,
    )


def result(tool_use_id: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


def error(message: str) -> str:
    return json.dumps({"error": message})


class ToolCalls:
    """An ON_TOOL_CALL observer: how each call ended, by tool_use id."""

    def __init__(self) -> None:
        self.ended: dict[str, ToolCallEvent] = {}

    async def __call__(self, event: ToolCallEvent, context: HookContext) -> None:
        assert (context.room_id, context.channel_id) == (event.room_id, event.channel_id)
        self.ended[event.tool_call_id] = event


# -- turns --------------------------------------------------------------------------------


async def test_a_turn_without_tools_returns_the_text(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(reply_text("Hello there, how can I help?"))
    ai = AIChannel("agent", provider=provider, system_prompt="Be brief.")
    assert await ai.respond("R1", "hi") == "Hello there, how can I help?"
    [request] = fake.requests
    assert request.body["stream"] is True
    assert request.body["system"] == "Be brief."
    assert request.body["messages"] == [{"role": "user", "content": "hi"}]
    assert request.tool_names == []
    assert await ai.transcript("R1") == [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [text_block("Hello there, how can I help?")]},
    ]


async def test_the_models_words_reach_the_room_cleaned(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    """What the model writes is posted as a person may read it: an ANSI escape and a BEL
    removed, a right-to-left override shown as a marker; the transcript keeps its words."""
    words = "Deploying \x1b[2Jnow\x07 to \u202egnp.exe"
    fake.script(reply_text(words))
    said = Said()
    ai = AIChannel("agent", provider=provider, system_prompt="Be brief.")
    await within(ai.respond("R1", "hi", on_text=said))
    assert said.lines == ["Deploying [2Jnow to ⟦U+202E⟧gnp.exe"]
    assert (await ai.transcript("R1"))[-1]["content"] == [text_block(words)]


async def test_a_human_tool_pauses_until_answered(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(
        reply(text_block("Let me ask."), tool_use_block(ASK, QUESTION, id="toolu_1")),
        reply_text("Blue it is."),
    )
    human = asker()
    seen = watch(human.handler)
    ai = channel(provider, human)
    turn = start(ai.respond("R1", "Pick a colour for me"))

    update = await seen.wait_for(RenderState.EXECUTING)
    assert (update.tool_name, update.arguments, update.tool_call_id) == (ASK, QUESTION, "toolu_1")
    assert (update.room_id, update.channel_id, update.channel_type) == ("R1", "agent", "ai")
    assert len(fake.requests) == 1 and not turn.done()
    assert fake.requests[0].tool_names == ["lookup", "explode", "broken", ASK]

    assert human.handler.resolve(update.pending_id, '{"answer": "blue"}')
    assert await within(turn) == "Let me ask.\n\nBlue it is."
    assert fake.requests[-1].tool_results == [result("toolu_1", '{"answer":"blue"}')]
    assert human.handler.pending == {}


async def test_a_rejection_reaches_the_model_as_an_error(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("Fine."))
    human = asker()
    seen = watch(human.handler)
    turn = start(channel(provider, human).respond("R1", "Pick"))
    update = await seen.wait_for(RenderState.EXECUTING)
    assert human.handler.reject(update.pending_id, "I'd rather not say")
    assert await within(turn) == "Fine."
    assert fake.requests[-1].tool_results == [
        result("toolu_1", error("Rejected: I'd rather not say"), is_error=True)
    ]


async def test_a_timeout_reaches_the_model_with_the_exact_message(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("No answer, moving on."))
    human = asker(timeout=0.05)
    calls = ToolCalls()
    ai = channel(provider, human)
    ai.hooks.register(HookTrigger.ON_TOOL_CALL, calls)
    assert await within(ai.respond("R1", "Pick")) == "No answer, moving on."
    timed_out = "Human input timed out after 0.05s for tool 'AskUserQuestion'"
    assert fake.requests[-1].tool_results == [result("toolu_1", error(timed_out), is_error=True)]
    ended = calls.ended["toolu_1"]
    assert (ended.is_error, ended.refused, ended.cancelled) == (True, False, False)


async def test_tools_of_one_round_run_concurrently(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(
        reply(
            tool_use_block(ASK, QUESTION, id="toolu_human"),
            tool_use_block("lookup", {"q": "blue"}, id="toolu_lookup"),
        ),
        reply_text("Done."),
    )
    human = asker()
    seen = watch(human.handler)
    lookup_done = asyncio.Event()

    async def lookup_after_the_question(name: str, arguments: dict[str, Any]) -> str:
        # Only reachable if the human tool, first in the round, is already waiting.
        await seen.wait_for(RenderState.EXECUTING)
        lookup_done.set()
        return await tools(name, arguments)

    ai = channel(provider, human)
    ai.tool_handler = lookup_after_the_question
    turn = start(ai.respond("R1", "Pick"))

    await within(lookup_done.wait())
    [pending] = human.handler.pending.values()  # the person has not answered yet
    assert not turn.done() and len(fake.requests) == 1
    assert human.handler.resolve(pending.pending_id, '{"answer": "blue"}')
    assert await within(turn) == "Done."
    assert fake.requests[-1].tool_results == [
        result("toolu_human", '{"answer":"blue"}'),
        result("toolu_lookup", "found blue"),
    ]


@dataclass
class UncheckedTurn:
    """A turn FakeAnthropic serves without checking its tools against those offered (it only
    checks `Turn` instances): a model calling a tool it was never given."""

    content: list[dict[str, Any]]
    stop_reason: str = "tool_use"
    delay: float = 0.0
    hold: asyncio.Event | None = None
    cut_after: int | None = None
    reset: bool = False


async def test_a_tool_not_offered_is_refused_and_warned_about_once(
    fake: FakeAnthropic, provider: AnthropicAIProvider, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="bot.agent")
    # Served but never offered: the loop drops it before the handler, and nobody is asked.
    human = HumanInputToolHandler(tool_names={ASK}, timeout=WAIT)
    seen = watch(human.handler)
    ai = AIChannel("agent", provider=provider, tool_handler=tools, human_input_handler=human)
    unchecked = [
        UncheckedTurn([tool_use_block("ghost", {}, id="t1"), tool_use_block(ASK, QUESTION, "t2")]),
        UncheckedTurn([tool_use_block("ghost", {}, id="t3")]),
    ]
    fake.script(*cast(list[Turn], unchecked), reply_text("I'll manage."))

    assert await within(ai.respond("R1", "Pick")) == "I'll manage."
    assert fake.requests[0].tool_names == []
    assert fake.requests[1].tool_results == [
        result("t1", error("Tool 'ghost' is not available in this conversation"), is_error=True),
        result("t2", error(f"Tool '{ASK}' is not available in this conversation"), is_error=True),
    ]
    assert fake.requests[2].tool_results == [
        result("t3", error("Tool 'ghost' is not available in this conversation"), is_error=True)
    ]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len([w for w in warnings if "'ghost'" in w]) == 1
    assert len([w for w in warnings if f"'{ASK}'" in w]) == 1
    await human.handler.drain()
    assert seen.updates == [] and human.handler.pending == {}


# -- hooks --------------------------------------------------------------------------------


async def test_before_tool_use_can_block_a_call(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(
        reply(tool_use_block(ASK, QUESTION, id="toolu_1"), tool_use_block("lookup", {"q": "a"})),
        reply_text("Rate limited, then."),
    )
    human = asker()
    seen = watch(human.handler)
    calls = ToolCalls()
    ai = channel(provider, human)

    async def rate_limit(event: ToolCallEvent, context: HookContext) -> HookResult:
        if event.tool_name == ASK:
            return HookResult.block("Rate limited: one question per minute")
        return HookResult.allow()

    ai.hooks.register(HookTrigger.BEFORE_TOOL_USE, rate_limit)
    ai.hooks.register(HookTrigger.ON_TOOL_CALL, calls)
    assert await within(ai.respond("R1", "Pick")) == "Rate limited, then."
    refused, looked_up = fake.requests[-1].tool_results
    assert refused == result(
        "toolu_1", error("Rate limited: one question per minute"), is_error=True
    )
    assert looked_up["content"] == "found a" and "is_error" not in looked_up
    assert calls.ended["toolu_1"].refused and calls.ended["toolu_1"].is_error
    await human.handler.drain()
    # Announced while streaming, never asked: the "Preparing…" state is closed, not left open.
    assert seen.states() == [RenderState.IN_PROGRESS, RenderState.CANCELLED]


async def test_before_tool_use_can_replace_the_arguments(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(
        reply(tool_use_block(ASK, QUESTION, id="toolu_1"), tool_use_block("lookup", {"q": "a"})),
        reply_text("Thanks."),
    )
    human = asker()
    seen = watch(human.handler)
    ai = channel(provider, human)
    replacements = {ASK: {"question": "Which colour, please?"}, "lookup": {"q": "rewritten"}}

    async def rewrite(event: ToolCallEvent, context: HookContext) -> HookResult:
        return HookResult.allow({"arguments": replacements[event.tool_name]})

    ai.hooks.register(HookTrigger.BEFORE_TOOL_USE, rewrite)
    turn = start(ai.respond("R1", "Pick"))
    update = await answer_next(human.handler, seen, '{"answer": "red"}')
    assert update.arguments == {"question": "Which colour, please?"}
    assert await within(turn) == "Thanks."
    contents = [b["content"] for b in fake.requests[-1].tool_results]
    assert contents == ['{"answer":"red"}', "found rewritten"]


@pytest.mark.parametrize(
    ("replacement", "problem"),
    [
        ({"question": 5}, "5 is not of type 'string'"),
        ({}, "'question' is a required property"),
        ({"question": "ok", "also": 1}, "Additional properties are not allowed"),
    ],
)
async def test_replacement_arguments_failing_the_schema_are_refused(
    fake: FakeAnthropic, provider: AnthropicAIProvider, replacement: dict[str, Any], problem: str
) -> None:
    fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("Hm."))
    human = asker()
    seen = watch(human.handler)
    calls = ToolCalls()
    ai = channel(provider, human)

    async def bad_rewrite(event: ToolCallEvent, context: HookContext) -> HookResult:
        return HookResult.allow({"arguments": replacement})

    ai.hooks.register(HookTrigger.BEFORE_TOOL_USE, bad_rewrite)
    ai.hooks.register(HookTrigger.ON_TOOL_CALL, calls)
    assert await within(ai.respond("R1", "Pick")) == "Hm."
    [refused] = fake.requests[-1].tool_results
    assert refused["is_error"] is True
    message = json.loads(refused["content"])["error"]
    assert message.startswith("Replacement arguments rejected: ")
    assert problem in message
    assert calls.ended["toolu_1"].refused
    await human.handler.drain()
    # Announced while streaming, never asked: the "Preparing…" state is closed, not left open.
    assert seen.states() == [RenderState.IN_PROGRESS, RenderState.CANCELLED]


async def test_on_tool_call_observers_see_how_each_call_ended(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(
        reply(
            tool_use_block("lookup", {"q": "a"}, id="t_ok"),
            tool_use_block(ASK, QUESTION, id="t_ask"),
            tool_use_block("broken", {}, id="t_broken"),
            tool_use_block("explode", {}, id="t_explode"),
        ),
        reply_text("Noted."),
    )
    human = asker()
    seen = watch(human.handler)
    calls = ToolCalls()
    ai = channel(provider, human)
    ai.hooks.register(HookTrigger.ON_TOOL_CALL, calls)
    turn = start(ai.respond("R1", "Go", actor_id="U1"))
    update = await seen.wait_for(RenderState.EXECUTING)
    assert human.handler.reject(update.pending_id, "no")
    assert await within(turn) == "Noted."

    ended = {k: (e.result, e.is_error, e.refused, e.cancelled) for k, e in calls.ended.items()}
    assert ended == {
        "t_ok": ("found a", False, False, False),
        "t_ask": (error("Rejected: no"), True, True, False),
        "t_broken": (error("disk full"), True, False, False),
        "t_explode": (error("Tool 'explode' failed"), True, False, False),
    }
    assert calls.ended["t_explode"].error_detail == (
        "ValueError: password hunter2 leaked in the message"
    )
    assert {(e.tool_name, e.room_id, e.channel_id, e.actor_id) for e in calls.ended.values()} == {
        ("lookup", "R1", "agent", "U1"),
        (ASK, "R1", "agent", "U1"),
        ("broken", "R1", "agent", "U1"),
        ("explode", "R1", "agent", "U1"),
    }


async def test_a_crashing_tool_gives_the_model_a_generic_error(
    fake: FakeAnthropic, provider: AnthropicAIProvider, caplog: pytest.LogCaptureFixture
) -> None:
    fake.script(reply_tool_use("explode", {}, id="toolu_1"), reply_text("Oops."))
    ai = channel(provider, asker())
    assert await within(ai.respond("R1", "Go")) == "Oops."
    assert fake.requests[-1].tool_results == [
        result("toolu_1", '{"error": "Tool \'explode\' failed"}', is_error=True)
    ]
    assert "hunter2" not in json.dumps(fake.requests[-1].body)
    [logged] = [r for r in caplog.records if r.getMessage() == "tool explode failed"]
    assert logged.exc_info is not None and isinstance(logged.exc_info[1], ValueError)


async def test_on_user_input_required_hook_can_deny(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), reply_text("Not allowed, then."))
    human = asker()
    seen = watch(human.handler)
    bridge = Bridge()
    ai = channel(provider, human)
    bridge.register_channel(ai)

    @bridge.hook(HookTrigger.ON_USER_INPUT_REQUIRED)
    async def deny(event: Any, context: HookContext) -> HookResult:
        return HookResult.block("no humans today")

    assert await within(ai.respond("R1", "Pick")) == "Not allowed, then."
    denied = "Rejected: Denied by ON_USER_INPUT_REQUIRED hook"
    assert fake.requests[-1].tool_results == [result("toolu_1", error(denied), is_error=True)]
    await bridge.close()
    assert seen.states() == [RenderState.IN_PROGRESS, RenderState.EXECUTING, RenderState.REJECTED]


# -- render states ------------------------------------------------------------------------


async def test_in_progress_is_heard_while_the_call_streams_in(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    hold = asyncio.Event()
    fake.script(
        reply(
            tool_use_block("lookup", {"q": "a"}, id="toolu_lookup"),
            tool_use_block(ASK, QUESTION, id="toolu_ask"),
            hold=hold,
        ),
        reply_text("Thanks."),
    )
    human = asker()
    seen = watch(human.handler)
    turn = start(channel(provider, human).respond("R1", "Pick", actor_id="U1"))

    preparing = await seen.wait_for(RenderState.IN_PROGRESS)
    # The stream is still open (held before its message_delta): nothing is executing yet.
    assert not hold.is_set() and not turn.done()
    assert seen.of(RenderState.EXECUTING) == [] and human.handler.pending == {}
    assert (preparing.tool_name, preparing.tool_call_id) == (ASK, "toolu_ask")
    assert (preparing.room_id, preparing.channel_id, preparing.actor_id) == ("R1", "agent", "U1")
    assert preparing.pending_id == ""

    hold.set()
    executing = await answer_next(human.handler, seen, '{"answer": "blue"}')
    assert executing.tool_call_id == "toolu_ask" and executing.arguments == QUESTION
    assert await within(turn) == "Thanks."
    await human.handler.drain()
    assert seen.states() == [RenderState.IN_PROGRESS, RenderState.EXECUTING, RenderState.COMPLETE]
    assert {u.tool_call_id for u in seen.updates} == {"toolu_ask"}  # lookup is not a human tool
    assert fake.aborted == 0


# -- cancellation and the transcript --------------------------------------------------------


async def test_a_cancelled_turn_withdraws_the_request_and_leaves_a_usable_transcript(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(
        reply(tool_use_block(ASK, QUESTION, id="toolu_1"), tool_use_block("lookup", {"q": "a"})),
    )
    human = asker()
    seen = watch(human.handler)
    calls = ToolCalls()
    ai = channel(provider, human)
    ai.hooks.register(HookTrigger.ON_TOOL_CALL, calls)
    turn = start(ai.respond("R1", "Pick", actor_id="U1"))
    update = await seen.wait_for(RenderState.EXECUTING)

    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(turn)
    assert human.handler.resolve(update.pending_id, '{"answer": "late"}') is False
    cancelled = await seen.wait_for(RenderState.CANCELLED)
    assert cancelled.pending_id == update.pending_id
    assert human.handler.pending == {}
    await ai.hooks.drain()
    assert calls.ended["toolu_1"].cancelled and calls.ended["toolu_1"].is_error

    # FakeAnthropic answers 400 to a tool_use without its tool_result: this proves it has one.
    fake.script(reply_text("Never mind, then."))
    assert await within(ai.respond("R1", "Forget it")) == "Never mind, then."
    last = fake.requests[-1]
    assert last.tool_results[0] == result("toolu_1", error("Tool call cancelled"), is_error=True)
    assert last.body["messages"][-1]["content"][-1] == text_block("Forget it")


async def test_the_transcript_is_saved_at_every_tool_boundary(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn, sqlite_url: str
) -> None:
    from bot.store import open_store

    store = await open_store(sqlite_url)
    try:
        second_call = asyncio.Event()
        release = asyncio.Event()

        def held_answer(body: dict[str, Any]) -> Turn:
            second_call.set()
            return reply_text("Blue it is.", hold=release)

        fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"), held_answer)
        human = asker()
        seen = watch(human.handler)
        ai = channel(provider, human, store=store)
        turn = start(ai.respond("R1", "Pick a colour", actor_id="U1"))

        update = await seen.wait_for(RenderState.EXECUTING)
        saved = await store.load_transcript("R1", "agent")
        assert [m["role"] for m in saved] == ["user", "assistant"]
        assert saved[0]["content"] == "Pick a colour"
        [tool_use] = saved[1]["content"]
        assert (tool_use["type"], tool_use["id"], tool_use["name"]) == ("tool_use", "toolu_1", ASK)
        assert tool_use["input"] == QUESTION

        assert human.handler.resolve(update.pending_id, '{"answer": "blue"}')
        await within(second_call.wait())
        saved = await store.load_transcript("R1", "agent")  # results saved before the model runs
        assert saved[-1] == {"role": "user", "content": [result("toolu_1", '{"answer":"blue"}')]}
        release.set()
        assert await within(turn) == "Blue it is."
        saved = await store.load_transcript("R1", "agent")
        assert saved[-1] == {"role": "assistant", "content": [text_block("Blue it is.")]}

        # Another channel object on the same store (a restart) carries on from it.
        fake.script(reply_text("You're welcome."))
        again = channel(provider, asker(), store=store)
        assert await within(again.respond("R1", "Thanks")) == "You're welcome."
        assert fake.requests[-1].body["messages"] == [*saved, {"role": "user", "content": "Thanks"}]
    finally:
        await store.close()


async def test_a_round_a_restart_left_without_results_does_not_break_the_room(
    fake: FakeAnthropic, provider: AnthropicAIProvider, sqlite_url: str
) -> None:
    from bot.store import open_store

    store = await open_store(sqlite_url)
    try:
        # What a process that stopped while a person was being asked leaves in the store.
        asked = {"role": "assistant", "content": [tool_use_block(ASK, QUESTION, id="toolu_1")]}
        await store.save_transcript("R1", "agent", [{"role": "user", "content": "Pick"}, asked])
        fake.script(reply_text("Where were we?"))
        ai = channel(provider, asker(), store=store)
        assert await within(ai.respond("R1", "Hello?")) == "Where were we?"
        assert fake.requests[-1].body["messages"][-1] == {
            "role": "user",
            "content": [
                result("toolu_1", error("Tool call cancelled"), is_error=True),
                text_block("Hello?"),
            ],
        }
    finally:
        await store.close()


class ParkAfterToolUseSave:
    """The real store; the save of an assistant tool_use then parks (its commit landed, its
    caller has not heard yet), so the turn can be cancelled exactly there."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.parked = asyncio.Event()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.store, name)

    async def save_transcript(
        self, room_id: str, channel_id: str, messages: list[dict[str, Any]]
    ) -> None:
        await self.store.save_transcript(room_id, channel_id, messages)
        last = messages[-1]
        uses = [b for b in last["content"] if isinstance(b, dict) and b["type"] == "tool_use"]
        if last["role"] == "assistant" and uses and not self.parked.is_set():
            self.parked.set()
            await asyncio.Event().wait()


async def test_a_turn_cancelled_while_saving_the_tool_use_leaves_a_usable_transcript(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn, sqlite_url: str
) -> None:
    from bot.store import open_store

    store = await open_store(sqlite_url)
    try:
        parking = ParkAfterToolUseSave(store)
        fake.script(reply_tool_use(ASK, QUESTION, id="toolu_1"))
        human = asker()
        turn = start(channel(provider, human, store=parking).respond("R1", "Pick"))
        await within(parking.parked.wait())
        turn.cancel()
        with pytest.raises(asyncio.CancelledError):
            await within(turn)
        assert human.handler.pending == {}

        fake.script(reply_text("Sorry, go on."))
        again = channel(provider, asker(), store=store)
        assert await within(again.respond("R1", "Hello?")) == "Sorry, go on."
        assert fake.requests[-1].tool_results == [
            result("toolu_1", error("Tool call cancelled"), is_error=True)
        ]
    finally:
        await store.close()


async def test_a_turn_cancelled_while_posting_its_text_leaves_a_usable_transcript(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(reply(text_block("I'll ask."), tool_use_block(ASK, QUESTION, id="toolu_1")))
    human = asker()
    posting = asyncio.Event()
    posted: list[str] = []

    async def post_slowly(text: str) -> None:
        posted.append(text)
        posting.set()
        await asyncio.Event().wait()  # a surface that never finishes posting

    ai = channel(provider, human)
    turn = start(ai.respond("R1", "Pick", on_text=post_slowly))
    await within(posting.wait())
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(turn)
    assert posted == ["I'll ask."] and human.handler.pending == {}

    fake.script(reply_text("Go on."))
    assert await within(ai.respond("R1", "Hello?")) == "Go on."
    assert fake.requests[-1].tool_results == [
        result("toolu_1", error("Tool call cancelled"), is_error=True)
    ]


async def test_a_cancelled_turn_without_a_store_is_not_left_for_the_next_one(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    arrived = asyncio.Event()

    def never_finished(body: dict[str, Any]) -> Turn:
        arrived.set()
        return reply_text("never finished", hold=asyncio.Event())

    fake.script(never_finished)
    ai = channel(provider, asker())
    turn = start(ai.respond("R1", "first"))
    await within(arrived.wait())
    turn.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(turn)
    fake.script(reply_text("Hello."))
    assert await within(ai.respond("R1", "second")) == "Hello."
    assert fake.requests[-1].body["messages"] == [
        {"role": "user", "content": [text_block("first"), text_block("second")]}
    ]


# -- who the turn is for --------------------------------------------------------------------


@pytest.mark.parametrize("actor", ["U1", None])
async def test_actor_id_flows_into_the_request_and_the_tool_context(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn, actor: str | None
) -> None:
    fake.script(
        reply(tool_use_block("lookup", {"q": "a"}), tool_use_block(ASK, QUESTION)),
        reply_text("Done."),
    )
    human = asker()
    seen = watch(human.handler)
    actors: list[str | None] = []

    async def record_actor(name: str, arguments: dict[str, Any]) -> str:
        actors.append(current_tool_actor_id())
        return "ok"

    gated: list[str | None] = []

    async def gate(event: ToolCallEvent, context: HookContext) -> None:
        gated.append(event.actor_id)

    ai = channel(provider, human)
    ai.tool_handler = record_actor
    ai.hooks.register(HookTrigger.BEFORE_TOOL_USE, gate)
    turn = start(ai.respond("R1", "Go", actor_id=actor))
    update = await seen.wait_for(RenderState.EXECUTING)
    assert human.handler.pending[update.pending_id].actor_id == actor
    assert update.actor_id == actor
    assert human.handler.resolve(update.pending_id, '{"answer": "x"}')
    assert await within(turn) == "Done."
    assert actors == [actor] and gated == [actor, actor]
    assert current_tool_actor_id() is None


async def test_an_api_error_surfaces_and_the_room_stays_usable(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.error(529, "overloaded_error", "Overloaded")
    ai = channel(provider, asker())
    with pytest.raises(anthropic.APIStatusError) as failed:
        await ai.respond("R1", "first")
    assert failed.value.status_code == 529
    fake.script(reply_text("Back."))
    assert await ai.respond("R1", "second") == "Back."


# -- a reply cut short ----------------------------------------------------------------------


def _index_after(turn: Turn, last: str, count: int = 1) -> int:
    """A `cut_after` that ends the stream right after the `count`-th event of type `last`."""
    types = [event["type"] for event in stream_events(turn)]
    return [i for i, kind in enumerate(types) if kind == last][count - 1] + 1


def _asking(call_id: str, **cut: Any) -> Turn:
    return reply(text_block("Let me ask."), tool_use_block(ASK, QUESTION, id=call_id), **cut)


ASKING = _asking("toolu_x")
CUTS = {
    # The tool input is complete, and the stream ends before the reply does.
    "before-message_delta": {"cut_after": _index_after(ASKING, "content_block_stop", 2)},
    "before-message_stop": {"cut_after": -1},  # even with stop_reason "tool_use" in hand
    "connection-dropped": {"cut_after": -1, "reset": True},
}


def _states_of(seen: Watch, call_id: str) -> list[RenderState]:
    return [u.state for u in seen.updates if u.tool_call_id == call_id]


class Said:
    """A turn's text callback: what the person was told, in order."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    async def __call__(self, text: str) -> None:
        self.lines.append(text)


@pytest.mark.parametrize("cut", CUTS.values(), ids=CUTS.keys())
async def test_a_reply_cut_short_is_asked_for_again_and_the_turn_goes_on(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn, cut: dict[str, Any]
) -> None:
    fake.script(_asking("toolu_cut", **cut), _asking("toolu_1"), reply_text("Blue it is."))
    human = asker()
    seen = watch(human.handler)
    said = Said()
    turn = start(channel(provider, human).respond("R1", "Pick", actor_id="U1", on_text=said))

    update = await answer_next(human.handler, seen, '{"answer": "blue"}')
    assert update.tool_call_id == "toolu_1"
    assert await within(turn) == "Let me ask.\n\nBlue it is."
    assert said.lines == ["Let me ask.", "Blue it is."]  # the cut reply's text was never used
    assert (len(fake.requests), fake.cut) == (3, 1)
    assert fake.requests[1].body["messages"] == fake.requests[0].body["messages"]
    assert fake.requests[2].tool_results == [result("toolu_1", '{"answer":"blue"}')]
    await human.handler.drain()
    # The cut call was announced while it streamed in, then closed: nobody was asked.
    assert _states_of(seen, "toolu_cut") == [RenderState.IN_PROGRESS, RenderState.CANCELLED]
    assert _states_of(seen, "toolu_1") == [
        RenderState.IN_PROGRESS, RenderState.EXECUTING, RenderState.COMPLETE,
    ]  # fmt: skip


@pytest.mark.parametrize("cut", CUTS.values(), ids=CUTS.keys())
async def test_a_reply_cut_short_twice_asks_nobody_and_tells_the_person(
    fake: FakeAnthropic, provider: AnthropicAIProvider, cut: dict[str, Any]
) -> None:
    fake.script(_asking("toolu_cut1", **cut), _asking("toolu_cut2", **cut))
    human = asker()
    seen = watch(human.handler)
    said = Said()
    ai = channel(provider, human)

    assert await within(ai.respond("R1", "Pick", on_text=said)) == INTERRUPTED
    assert said.lines == [INTERRUPTED] == ["The agent's reply was interrupted."]
    assert (len(fake.requests), fake.cut) == (2, 2)
    await human.handler.drain()
    assert human.handler.pending == {} and seen.of(RenderState.EXECUTING) == []
    for call_id in ("toolu_cut1", "toolu_cut2"):
        assert _states_of(seen, call_id) == [RenderState.IN_PROGRESS, RenderState.CANCELLED]
    assert {u.reason for u in seen.of(RenderState.CANCELLED)} == {INTERRUPTED}

    # Nothing of the cut replies is in the transcript: the room goes on from the person's words.
    fake.script(reply_text("Sorry, where were we?"))
    assert await within(ai.respond("R1", "Hello?")) == "Sorry, where were we?"
    assert fake.requests[-1].body["messages"] == [
        {"role": "user", "content": [text_block("Pick"), text_block("Hello?")]}
    ]


@pytest.mark.parametrize("reset", [False, True], ids=["ended", "connection-dropped"])
async def test_a_reply_cut_mid_text_is_never_shown_in_part(
    fake: FakeAnthropic, provider: AnthropicAIProvider, reset: bool
) -> None:
    words = "Here is a fairly long answer, in several words."
    mid_text = _index_after(reply_text(words), "content_block_delta", 2)
    fake.script(
        reply_text(words, cut_after=mid_text, reset=reset),
        reply_text(words, cut_after=mid_text, reset=reset),
        reply_text(words, cut_after=mid_text, reset=reset),
        reply_text(words),
    )
    said = Said()
    ai = channel(provider, asker())
    assert await within(ai.respond("R1", "Explain", on_text=said)) == INTERRUPTED
    assert said.lines == [INTERRUPTED]
    assert await within(ai.respond("R1", "Again?", on_text=said)) == words  # cut, then whole
    assert said.lines == [INTERRUPTED, words]
    assert (len(fake.requests), fake.cut) == (4, 3)
    assert fake.requests[-1].body["messages"] == [
        {"role": "user", "content": [text_block("Explain"), text_block("Again?")]}
    ]


async def test_a_reply_cut_before_it_began_is_asked_for_again(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(reply_text("never", cut_after=0), reply_text("Hello."))
    assert await within(channel(provider, asker()).respond("R1", "hi")) == "Hello."
    assert (len(fake.requests), fake.cut) == (2, 1)
