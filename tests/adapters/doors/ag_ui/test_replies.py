"""StreamedReplies: a reply's pieces as one AG-UI text message, whatever ends it."""

from __future__ import annotations

from ag_ui.core import BaseEvent, EventType, TextMessageContentEvent

from adapters.doors.ag_ui.replies import INTERRUPTED, StreamedReplies
from bot.agent.steps import ToolStep


def streamed() -> tuple[StreamedReplies, list[BaseEvent]]:
    told: list[BaseEvent] = []
    return StreamedReplies(told.append), told


def words(events: list[BaseEvent]) -> str:
    return "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))


def test_pieces_are_one_message_ended_when_the_reply_is_complete() -> None:
    replies, told = streamed()
    replies.thinking()
    replies.text("Hello ")
    replies.text("there.")
    assert replies.said("Hello there.") == []  # already told, piece by piece
    assert [e.type for e in told] == [
        EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT,
        EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_END,
    ]  # fmt: skip
    assert words(told) == "Hello there."
    assert len({getattr(e, "message_id", None) for e in told}) == 1


def test_a_reply_not_streamed_is_told_whole_when_complete() -> None:
    replies, told = streamed()
    replies.thinking()
    whole = replies.said("All at once.")
    assert told == [] and words(whole) == "All at once."


def test_a_tool_call_ends_the_message_and_the_next_reply_is_another() -> None:
    replies, told = streamed()
    replies.thinking()
    replies.text("Let me look.")
    replies.tool_started(ToolStep("toolu_1", "lookup"))
    replies.thinking()
    replies.text("Found it.")
    replies.end()
    ends = [e for e in told if e.type is EventType.TEXT_MESSAGE_END]
    assert len(ends) == 2
    assert len({getattr(e, "message_id", None) for e in told}) == 2


def test_a_reply_cut_short_says_so_and_the_next_try_is_its_own_message() -> None:
    replies, told = streamed()
    replies.thinking()
    replies.text("Deploying to")
    replies.discarded()
    replies.thinking()
    replies.text("Deployed.")
    assert replies.said("Deployed.") == []
    assert words(told) == f"Deploying to{INTERRUPTED}Deployed."
    assert [e.type for e in told].count(EventType.TEXT_MESSAGE_END) == 2
