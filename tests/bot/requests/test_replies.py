"""bot/requests/replies.py: which open request a person's message answers, whatever the
surface: the one it replies to, else the only one there, else ask which (never the oldest)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from bot.human_tools.tool import BUILTIN_TOOLS
from bot.records import RequestRecord
from bot.requests.kinds import Verb
from bot.requests.replies import (
    REPLY_INPUT,
    Answers,
    AskWhich,
    read_reply,
    reading_of,
    reply_interaction,
)
from bot.requests.router import Router

ALICE, BOB = "U0ALICE001", "U0BOB00001"


def record(request_id: str, tool: str = "AskUserQuestion", actor: str = ALICE) -> RequestRecord:
    now = datetime.now(UTC)
    return RequestRecord(
        id=request_id, tool_name=tool, arguments={"question": f"Question {request_id}?"},
        room_id="slack:D1:", tool_call_id=f"call_{request_id}", channel_id="api",
        channel_type="door", actor_id=actor, detached=True, created_at=now,
        expires_at=now + timedelta(minutes=5),
    )  # fmt: skip


def router() -> Router:
    """Who may answer by the default rule (the actor), what takes replies by the built-ins."""
    return Router(store=None, handler_for=lambda channel: None, tools=BUILTIN_TOOLS)


def test_a_reply_to_a_requests_message_answers_it_whatever_else_is_open() -> None:
    first, second = record("r1"), record("r2")
    assert read_reply([second], [first, second]) == Answers(second)


def test_the_only_open_request_is_answered() -> None:
    only = record("r1")
    assert read_reply([], [only]) == Answers(only)


def test_several_open_requests_ask_which_never_the_oldest() -> None:
    first, second = record("r1"), record("r2")
    assert read_reply([], [first, second]) == AskWhich((first, second))


def test_nothing_open_is_nothing_to_answer() -> None:
    assert read_reply([], []) is None


async def test_only_questions_the_writer_may_answer_count() -> None:
    mine = record("r1")
    approval = record("r2", tool="requestApproval")  # answered by its buttons, not a reply
    bobs = record("r3", actor=BOB)  # Alice may not answer it

    assert await reading_of(router(), ALICE, replied_to=[], here=[mine, approval, bobs]) == (
        Answers(mine)
    )
    assert await reading_of(router(), ALICE, replied_to=[bobs], here=[mine]) == Answers(mine)
    assert await reading_of(router(), BOB, replied_to=[], here=[mine, approval]) is None


def test_a_reply_is_the_answer_verb_with_the_words_in_the_answer_field() -> None:
    reply = reply_interaction("r1", ALICE, "Blue", surface="slack")
    assert (reply.request_id, reply.user_id, reply.verb) == ("r1", ALICE, Verb.ANSWER)
    assert reply.inputs == {REPLY_INPUT: "Blue"} and reply.submitted
