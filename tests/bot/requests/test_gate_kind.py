"""bot/requests/kinds.py's approval gate kind and bot/gates/approvals.py: the answers its
controls give and how an edit is checked against the tool's schema, field by field."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.errors import AnswerInvalidError
from bot.gates.approvals import check_answer, duration, edit_changes, edit_errors, request_arguments
from bot.human_tools.forms import read_form
from bot.requests.asked_kinds import GATE, gate_edit_form
from bot.requests.kind_of import kind_of
from bot.requests.kinds import Verb
from bot.words.tool_names import GATE_TOOL

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "minLength": 2},
        "size": {"type": "integer", "enum": [1, 2, 4]},
        "zones": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
        "token": {"type": "string"},
    },
    "required": ["service", "size", "token"],
    "additionalProperties": False,
}
ARGS = request_arguments(
    tool="scale", description="Scale a service.", schema=SCHEMA,
    arguments={"service": "api", "size": 2, "zones": ["a"], "token": "t0ps3cret"},
    redact=["token"], grant_seconds=1800,
)  # fmt: skip


def test_the_gate_is_the_kind_of_its_reserved_tool_whatever_is_registered() -> None:
    assert kind_of(GATE_TOOL, None) is GATE
    assert ARGS["schema"]["required"] == ["service", "size"]  # the token is not edited
    assert "token" not in ARGS["schema"]["properties"]


def test_each_control_gives_its_answer() -> None:
    approve, grant, edit = GATE.controls(ARGS)
    assert (approve.verb, grant.verb, edit.verb) == (Verb.APPROVE, Verb.GRANT, Verb.EDIT)
    assert grant.label == "Approve and allow scale here for 30 minutes"
    assert GATE.answer(Verb.APPROVE, {}, {}, ARGS) == {"approved": True}
    assert GATE.answer(Verb.GRANT, {}, {}, ARGS) == {"approved": True, "grant": True}
    assert edit.form is not None
    inputs = {"service": "web", "size": "2", "zones": ["1"]}  # option values, as submitted
    values = read_form(edit.form, inputs).values
    answer = GATE.answer(Verb.EDIT, values, inputs, ARGS)
    # The form carries options as text; the answer has the enum's own values back.
    assert answer == {"approved": True, "arguments": {"service": "web", "size": 4, "zones": ["b"]}}
    assert GATE.check is not None and GATE.check(answer, ARGS) == {}
    facts = {f.label: f.value for f in GATE.answer_facts(ARGS, answer)}
    assert facts == {
        "Decision": "Approved",
        "Edited": 'service: "api" → "web"\nsize: 2 → 4\nzones: ["a"] → ["b"]',
    }


@pytest.mark.parametrize(
    ("edited", "errors"),
    [
        ({"service": "a", "size": 2}, {"service": "'a' is too short"}),
        ({"size": 2}, {"service": "Required"}),
        ({"service": "api", "size": 3}, {"size": "3 is not one of [1, 2, 4]"}),
        ({"service": "api", "size": 2, "token": "x"}, {"": "Additional properties are not "
                                                          "allowed ('token' was unexpected)"}),
    ],
)  # fmt: skip
def test_an_edit_is_checked_field_by_field(edited: dict[str, Any], errors: dict[str, str]) -> None:
    assert edit_errors(ARGS["schema"], edited) == errors
    assert GATE.check is not None
    assert GATE.check({"approved": True, "arguments": edited}, ARGS) == errors
    with pytest.raises(AnswerInvalidError) as invalid:
        check_answer(ARGS, json.dumps({"approved": True, "arguments": edited}))
    assert invalid.value.fields == errors


@pytest.mark.parametrize(
    "answer",
    ['{"approved": false}', "yes", '{"approved": true, "grant": "1"}',
     '{"approved": true, "grant": true, "arguments": {}}', '{"approved": true, "also": 1}'],
)  # fmt: skip
def test_anything_but_an_approval_is_refused(answer: str) -> None:
    with pytest.raises(AnswerInvalidError):
        check_answer(ARGS, answer)


def test_a_valid_answer_is_stored_normalised() -> None:
    assert check_answer(ARGS, '{"grant": true, "approved": true}') == (
        '{"approved": true, "grant": true}'
    )


def test_changes_and_durations_read_naturally() -> None:
    assert edit_changes({"a": 1, "b": "x"}, {"a": 1.0, "c": True}) == [
        'b: "x" → (none)', "c: (none) → true",
    ]  # fmt: skip
    assert [duration(s) for s in (3600, 7200, 5400, 60, 45, 86400)] == [
        "1 hour", "2 hours", "90 minutes", "1 minute", "45 seconds", "1 day",
    ]  # fmt: skip


def test_the_edit_form_names_no_locked_argument() -> None:
    form = gate_edit_form(ARGS)
    assert [f.name for f in form.fields] == ["service", "size", "zones"]
    assert (form.title, form.submit) == ("Edit the call", "Approve")
