"""A turn's steps as a surface is told them: the reply piece by piece, each tool's start and end."""

from __future__ import annotations

from typing import Any

from bot.agent import AIChannel, AnthropicAIProvider
from bot.agent.scripted import ScriptedAIProvider
from bot.agent.steps import OUTCOME_CHARS, ToolStep, outcome_line
from bot.errors import ToolFailedError
from bot.human_input import RenderState
from bot.human_tools.tool import BUILTIN_TOOLS, HumanInputToolHandler
from bot.tools import AITool
from tests.bot.conftest import StartTurn, watch, within
from tests.fakes.anthropic_api import FakeAnthropic, reply, reply_text, text_block, tool_use_block

LOOKUP = AITool("lookup", "Look a word up.", {"type": "object", "properties": {}})
ASK = "AskUserQuestion"


class Steps:
    """A RunSteps that writes down what it is told, in order."""

    def __init__(self) -> None:
        self.told: list[tuple[str, Any]] = []

    def thinking(self) -> None:
        self.told.append(("thinking", None))

    def text(self, delta: str) -> None:
        self.told.append(("text", delta))

    def discarded(self) -> None:
        self.told.append(("discarded", None))

    def tool_started(self, step: ToolStep) -> None:
        self.told.append(("started", step))

    def tool_finished(self, step: ToolStep) -> None:
        self.told.append(("finished", step))

    def texts(self) -> str:
        return "".join(str(value) for kind, value in self.told if kind == "text")

    def kinds(self) -> list[str]:
        """What was told, with runs of text pieces as one "text"."""
        kinds: list[str] = []
        for kind, _ in self.told:
            if not (kind == "text" and kinds and kinds[-1] == "text"):
                kinds.append(kind)
        return kinds


async def lookup(name: str, arguments: dict[str, Any]) -> str:
    if arguments.get("q") == "fail":
        raise ToolFailedError("disk full")
    return "found it\nsecond line"


async def test_the_reply_is_told_piece_by_piece_and_each_tool_start_and_end(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(
        reply(text_block("Let me look that up."), tool_use_block("lookup", {}, id="toolu_1")),
        reply_text("It is \x1b[2Jthere, all good."),
    )
    steps = Steps()
    ai = AIChannel("agent", provider=provider, tool_handler=lookup, tools=[LOOKUP])
    said = await within(ai.respond("R1", "where?", steps=steps))
    assert steps.kinds() == ["thinking", "text", "started", "finished", "thinking", "text"]
    pieces = [value for kind, value in steps.told if kind == "text"]
    assert len(pieces) > 2  # word by word, as streamed, not whole replies
    assert steps.texts() == "Let me look that up.It is [2Jthere, all good."  # cleaned
    assert said == "Let me look that up.\n\nIt is \x1b[2Jthere, all good."
    finished = [value for kind, value in steps.told if kind == "finished"]
    assert finished == [ToolStep("toolu_1", "lookup", {}, True, "found it")]


async def test_two_text_blocks_are_told_as_the_reply_joins_them(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(reply(text_block("First part."), text_block(""), text_block("Second part.")))
    steps = Steps()
    ai = AIChannel("agent", provider=provider)
    said = await within(ai.respond("R1", "two blocks?", steps=steps))
    assert said == "First part.\nSecond part."
    assert steps.texts() == said  # what a stream showed is the reply: nothing shown twice


async def test_a_failed_tool_ends_its_step_with_the_error(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    fake.script(reply(tool_use_block("lookup", {"q": "fail"}, id="toolu_1")), reply_text("Sorry."))
    steps = Steps()
    ai = AIChannel("agent", provider=provider, tool_handler=lookup, tools=[LOOKUP])
    await within(ai.respond("R1", "go", steps=steps))
    [finished] = [value for kind, value in steps.told if kind == "finished"]
    assert finished.ok is False
    assert "disk full" in finished.outcome


async def test_a_human_tool_step_runs_until_the_person_answers(
    fake: FakeAnthropic, provider: AnthropicAIProvider, start: StartTurn
) -> None:
    fake.script(
        reply(tool_use_block(ASK, {"question": "Colour?"}, id="toolu_1")), reply_text("Blue.")
    )
    human = HumanInputToolHandler(tools=[BUILTIN_TOOLS[ASK]], timeout=5)
    seen = watch(human.handler)
    steps = Steps()
    turn = start(AIChannel("agent", provider=provider, human_input_handler=human).respond(
        "R1", "pick", steps=steps))  # fmt: skip
    update = await seen.wait_for(RenderState.EXECUTING)
    assert steps.kinds()[-1] == "started"
    assert human.handler.resolve(update.pending_id, '{"answer": "blue"}')
    await within(turn)
    [finished] = [value for kind, value in steps.told if kind == "finished"]
    assert (finished.ok, finished.outcome) == (True, '{"answer":"blue"}')


async def test_the_scripted_model_streams_its_words_too() -> None:
    steps = Steps()
    ai = AIChannel("agent", provider=ScriptedAIProvider(script=[]))
    said = await within(ai.respond("R1", "hi", steps=steps))
    assert said and steps.texts() == said
    assert len([kind for kind, _ in steps.told if kind == "text"]) > 1


def test_an_outcome_is_one_short_line() -> None:
    assert outcome_line('{"error": "Rejected: not today"}', is_error=True) == "Rejected: not today"
    assert outcome_line("", is_error=False) == "done"
    assert outcome_line("x" * 500, is_error=False) == "x" * (OUTCOME_CHARS - 1) + "…"
    assert outcome_line("plain failure", is_error=True) == "plain failure"


async def test_a_halt_left_by_a_turn_that_had_ended_does_not_cut_the_next(
    fake: FakeAnthropic, provider: AnthropicAIProvider
) -> None:
    """A stop that halts a room just as its turn ends must not end the room's next turn."""
    fake.script(reply_text("Still here."))
    ai = AIChannel("agent", provider=provider)
    ai.halt("R1")  # no turn runs in R1 now
    assert await within(ai.respond("R1", "hi")) == "Still here."
