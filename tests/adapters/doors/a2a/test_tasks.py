"""A2A messages read as door requests, and door requests told as tasks
(adapters/doors/a2a/tasks.py)."""

from __future__ import annotations

from typing import Any

import pytest
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import Message, Role, TaskArtifactUpdateEvent, TaskState, TaskStatusUpdateEvent
from a2a.utils.errors import InvalidParamsError
from google.protobuf.json_format import MessageToDict, ParseDict
from google.protobuf.struct_pb2 import Struct

from adapters.doors.a2a.tasks import ask_of, final_events, key_of, task_of

BODY = {"id": "r1", "status": "pending", "tool": "selectOption", "to": "slack:C1",
        "arguments": {"question": "?", "options": ["a", "b"]},
        "created_at": "2026-12-04T10:00:00Z", "expires_at": "2026-12-04T11:00:00Z"}  # fmt: skip


def message(*parts: Any, metadata: dict[str, Any] | None = None, context: str = "") -> Message:
    made = Message(role=Role.ROLE_USER, message_id="m1", context_id=context, parts=list(parts))
    if metadata:
        made.metadata.CopyFrom(ParseDict(metadata, Struct()))
    return made


def test_a_data_part_names_a_skill_or_a_tool_and_its_whole_numbers_stay_ints() -> None:
    data = {"tool": "select_option", "to": "slack:C1", "timeout_seconds": 60,
            "arguments": {"question": "?", "options": ["a", "b"], "n": 2}}  # fmt: skip
    ask = ask_of(message(new_data_part(data)))
    assert (ask.tool, ask.to, ask.timeout_seconds) == ("selectOption", "slack:C1", 60)
    assert ask.arguments["n"] == 2 and isinstance(ask.arguments["n"], int)
    assert ask_of(message(new_data_part({**data, "tool": "uploadFile"}))).tool == "uploadFile"


def test_text_is_a_question_addressed_by_the_metadata() -> None:
    ask = ask_of(message(new_text_part("Which"), new_text_part("region?"),
                         metadata={"to": "slack:C1", "timeout_seconds": 30}))  # fmt: skip
    assert (ask.tool, ask.arguments, ask.to) == ("AskUserQuestion", {"question": "Which\nregion?"},
                                                "slack:C1")  # fmt: skip
    assert ask.timeout_seconds == 30


@pytest.mark.parametrize(
    ("parts", "words"),
    [
        ([], "needs a data part"),
        ([new_text_part("  ")], "needs a data part"),
        ([new_text_part("Which?")], '"to" is missing'),
        ([new_data_part({"tool": "x", "to": 5})], "invalid data part: to"),
        ([new_data_part({"tool": "x", "to": "slack:C1", "extra": 1})], "extra"),
        ([new_data_part(["not", "an", "object"])], "invalid data part"),
        ([new_data_part({"tool": "x", "to": "s", "timeout_seconds": -1})], "timeout_seconds"),
    ],
)
def test_what_cannot_be_asked_is_invalid_params_naming_it(parts: list[Any], words: str) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        ask_of(message(*parts))
    assert words in str(refused.value)


def test_the_context_named_by_the_message_is_the_task_s() -> None:
    key = key_of(message(context="release-42"))
    assert task_of({**BODY, "idempotency_key": key}).context_id == "release-42"
    assert task_of({**BODY, "idempotency_key": key_of(message())}).context_id == "r1"
    assert task_of({**BODY, "idempotency_key": "someone's own key"}).context_id == "r1"


@pytest.mark.parametrize(
    ("status", "extra", "state", "words"),
    [
        ("pending", {}, TaskState.TASK_STATE_WORKING, "Asked slack:C1; waiting"),
        ("answered", {"answer": {"selectedIndex": 1}, "answered_by": "U1"},
         TaskState.TASK_STATE_COMPLETED, "Answered by U1."),
        ("declined", {"reason": "no", "answered_by": "U1"}, TaskState.TASK_STATE_REJECTED,
         "Declined by U1: no"),
        ("cancelled", {"reason": "Cancelled by its requester"}, TaskState.TASK_STATE_CANCELED,
         "Withdrawn: Cancelled by its requester"),
        ("expired", {}, TaskState.TASK_STATE_FAILED, "Expired unanswered."),
        ("undeliverable", {"reason": "channel_not_found"}, TaskState.TASK_STATE_FAILED,
         "Could not be delivered: channel_not_found"),
    ],
)  # fmt: skip
def test_each_status_is_its_task_state_and_says_why(
    status: str, extra: dict[str, Any], state: int, words: str
) -> None:
    task = task_of({**BODY, "status": status, **extra})
    assert task.id == "r1" and task.status.state == state
    assert words in task.status.message.parts[0].text
    assert bool(task.artifacts) is ("answer" in extra)
    assert MessageToDict(task.metadata)["hitl"]["status"] == status


def test_a_settled_stream_ends_with_the_answer_then_the_status() -> None:
    events = final_events({**BODY, "status": "answered", "answer": {"selectedIndex": 1}})
    artifact, status = events
    assert isinstance(artifact, TaskArtifactUpdateEvent)
    assert isinstance(status, TaskStatusUpdateEvent)
    assert MessageToDict(artifact.artifact.parts[0].data) == {"selectedIndex": 1.0}
    assert status.status.state == TaskState.TASK_STATE_COMPLETED
