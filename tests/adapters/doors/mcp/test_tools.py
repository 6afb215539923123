"""adapters/doors/mcp/tools.py's and results.py's pure parts: the tools as listed, their options,
and what a request's body becomes as an asking tool's result and as Claude Code's permission
answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from adapters.doors.mcp.results import answer_result, permission
from adapters.doors.mcp.tools import ASK_TOOLS, definitions, reserved_fields, split_options
from bot.doors.service import DoorError
from bot.human_tools.tool import BUILTIN_TOOLS


def body(status: str, **more: Any) -> dict[str, Any]:
    return {"id": "r1", "status": status, "expires_at": "2026-12-01T10:00:00Z", **more}


def test_each_asking_tool_takes_its_built_in_tool_s_arguments_and_the_options() -> None:
    listed = {tool.name: tool for tool in definitions(None, 3600)}
    for name, tool in ASK_TOOLS.items():
        schema = listed[name].input_schema
        builtin = BUILTIN_TOOLS[tool.builtin].definition().parameters
        assert schema["required"] == builtin["required"]
        assert set(schema["properties"]) == {*builtin["properties"], "to", "timeout_seconds",
                                             "wait_seconds"}  # fmt: skip
        assert schema["additionalProperties"] is False  # an unknown key is refused, not lost
        assert schema["properties"]["to"]["description"].endswith("Required.")
        assert schema["properties"]["wait_seconds"] == {
            "type": "number", "minimum": 0, "maximum": 60.0, "default": 45.0,
            "description": "How long this call waits for the answer before it returns pending.",
        }  # fmt: skip
        assert "await_answer" in (listed[name].description or "")
    assert "Default: 3600 seconds." in listed["ask_question"].input_schema["properties"][
        "timeout_seconds"]["description"]  # fmt: skip


def test_the_options_are_split_from_the_built_in_tool_s_arguments() -> None:
    options, rest = split_options("ask_question", {"question": "?", "to": "slack:C1",
                                                   "wait_seconds": 0})  # fmt: skip
    assert (options.to, options.timeout_seconds, options.wait_seconds) == ("slack:C1", None, 0)
    assert rest == {"question": "?"}
    with pytest.raises(DoorError) as refused:
        split_options("ask_question", {"question": "?", "wait_seconds": -1})
    assert refused.value.errors == {"wait_seconds": "Input should be greater than or equal to 0"}


def test_a_form_may_not_name_a_field_as_the_result_s_own_keys() -> None:
    fields = [{"name": "status", "label": "S"}, {"name": "ok", "label": "O"},
              {"name": "request_id", "label": "R"}]  # fmt: skip
    assert reserved_fields({"fields": fields}) == ["request_id", "status"]
    assert reserved_fields({"fields": "nonsense"}) == []


def test_an_answer_comes_with_the_request_s_id_status_and_who_answered() -> None:
    done = answer_result(body("answered", answer={"confirmed": False}, answered_by="U1"))
    expected = {"confirmed": False, "request_id": "r1", "status": "answered", "answered_by": "U1"}
    assert not done.is_error and done.structured_content == expected
    text = answer_result(body("answered", answer="free text", answered_by="U1"))
    assert text.structured_content == {"answer": "free text", "request_id": "r1",
                                       "status": "answered", "answered_by": "U1"}  # fmt: skip


def test_pending_says_how_to_wait_on() -> None:
    pending = answer_result(body("pending"))
    assert not pending.is_error
    assert pending.structured_content == {
        "status": "pending", "request_id": "r1", "expires_at": "2026-12-01T10:00:00Z",
        "message": "No answer yet: call await_answer with this request_id to wait on.",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("status", "reason", "by", "said"),
    [
        ("declined", "not now", "U1", "Declined by U1: not now"),
        ("declined", None, "U1", "Declined by U1"),
        ("expired", "Human input timed out after 60s", None,
         "Expired: Human input timed out after 60s"),
        ("cancelled", "Cancelled by its requester", "ci", "Cancelled: Cancelled by its requester"),
        ("undeliverable", "channel_not_found", None, "Undeliverable: channel_not_found"),
    ],
)  # fmt: skip
def test_a_request_settled_without_an_answer_is_a_tool_error_saying_so(
    status: str, reason: str | None, by: str | None, said: str
) -> None:
    ended = answer_result(body(status, reason=reason, answered_by=by))
    assert ended.is_error
    assert [block.text for block in ended.content if block.type == "text"] == [said]
    assert ended.structured_content == {"status": status, "request_id": "r1", "reason": reason,
                                        "answered_by": by}  # fmt: skip


ASKED = {"command": "ls", "timeout": 5}


@pytest.mark.parametrize(
    ("settled", "outcome"),
    [
        (body("answered", answer={"approved": True}),
         {"behavior": "allow", "updatedInput": ASKED}),
        (body("answered", answer={"approved": True, "arguments": {"command": "ls -a"}}),
         {"behavior": "allow", "updatedInput": {"command": "ls -a", "timeout": 5}}),
        (body("answered", answer={"approved": False}),
         {"behavior": "deny", "message": 'The answer could not be read: an approval is '
                                         '{"approved": true}; decline a call instead'}),
        (body("declined", reason="no", answered_by="U1"),
         {"behavior": "deny", "message": "Declined by U1: no"}),
        (body("expired", reason="Human input timed out after 60s"),
         {"behavior": "deny", "message": "Expired: Human input timed out after 60s"}),
        (body("pending"), {"behavior": "deny", "message": "Nobody answered in time."}),
    ],
)  # fmt: skip
def test_a_permission_request_becomes_claude_code_s_answer(
    settled: dict[str, Any], outcome: dict[str, Any]
) -> None:
    assert permission(settled, ASKED) == outcome
    json.dumps(outcome)  # what the tool's text carries
