"""`adaptiveCard/action` invoke values, read back; answers checked by the core's own models.

The values are built from what `render_card` produced, the way a Teams client builds them: the
clicked action's `data`, with every input of the card merged in under its id (an input the
person left empty is sent as ""). Each is also checked against the Teams SDK's own model of an
invoke value, so the shape is the one the SDK hands over.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from microsoft_teams.api.models import AdaptiveCardInvokeValue
from pydantic import BaseModel

from adapters.teams.actions import (
    ActionError,
    CardAction,
    Decline,
    answer_from_action,
    parse_action,
)
from adapters.teams.cards import Verb, render_card
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools import BUILTIN_TOOLS, HumanTool
from tests.adapters.teams.card_rules import executes, inputs

REQUEST_ID = "0123456789abcdef01234567"
ACTOR = "29:1actor-aad"

ARGS: dict[str, dict[str, Any]] = {
    "AskUserQuestion": {"question": "Which region?"},
    "requestApproval": {"action": "Deploy", "reason": "Release 1.2"},
    "selectOption": {"question": "Pick", "options": ["red", "green", "blue"]},
    "collectUserData": {
        "fields": [
            {"name": "age", "label": "Age", "type": "number"},
            {"name": "height", "label": "Height", "type": "number"},
            {"name": "email", "label": "Email", "type": "email"},
            {"name": "city", "label": "City", "type": "text"},
        ]
    },
    "uploadFile": {"purpose": "Invoice", "acceptedTypes": [".pdf", "image/png"]},
    "confirmAction": {"title": "Drop", "message": "Drop it?", "severity": "danger"},
}


def make_update(tool_name: str, arguments: dict[str, Any]) -> RequestUpdate:
    now = datetime(2026, 1, 2, tzinfo=UTC)
    return RequestUpdate(
        state=RenderState.EXECUTING,
        pending_id=REQUEST_ID,
        tool_name=tool_name,
        arguments=arguments,
        room_id="19:conversation;messageid=1",
        tool_call_id="toolu_1",
        channel_id="teams",
        channel_type="ai",
        actor_id=ACTOR,
        created_at=now,
        expires_at=now + timedelta(minutes=5),
    )


# -- what a Teams client sends -------------------------------------------------------------------


def invoke_value(
    card: dict[str, Any],
    verb: str,
    entered: dict[str, str] | None = None,
    *,
    trigger: str = "manual",
) -> dict[str, Any]:
    """`activity.value` of the invoke a click on `verb` sends: its data, the inputs merged in."""
    entered = entered or {}
    ids = [i["id"] for i in inputs(card)]
    assert set(entered) <= set(ids), f"no such input on the card: {set(entered) - set(ids)}"
    if verb == "hitl_refresh":  # the card's refresh clause: no inputs gathered
        action, ids = card["refresh"]["action"], []
    else:
        (action,) = [a for a in executes(card) if a["verb"] == verb]
    data = {**action["data"], **{i: entered.get(i, "") for i in ids}}
    value = {"action": {"type": "Action.Execute", "verb": verb, "data": data}, "trigger": trigger}
    if trigger == "manual":  # the SDK's model (2.1.1) knows only "manual"
        AdaptiveCardInvokeValue.model_validate(value)
    return value


def _live(
    tool_name: str, arguments: dict[str, Any] | None = None, tool: HumanTool | None = None
) -> dict[str, Any]:
    update = make_update(tool_name, arguments or ARGS[tool_name])
    return render_card(update, tool, live=True, refresh_user_ids=[ACTOR])


def _answer(
    tool_name: str,
    verb: str,
    entered: dict[str, str] | None = None,
    args: dict[str, Any] | None = None,
    tool: HumanTool | None = None,
) -> Any:
    arguments = args or ARGS.get(tool_name, {})
    action = parse_action(invoke_value(_live(tool_name, arguments, tool), verb, entered))
    return answer_from_action(action, arguments, tool or BUILTIN_TOOLS.get(tool_name))


# -- round trips -----------------------------------------------------------------------------------

ROUND_TRIPS = [
    ("AskUserQuestion", "hitl_answer", {"answer": "eu-west"}, {"answer": "eu-west"}),
    ("requestApproval", "hitl_approve", {}, {"approved": True}),
    ("requestApproval", "hitl_approve", {"reason": "ignored"}, {"approved": True}),
    (
        "requestApproval",
        "hitl_reject",
        {"reason": " too risky \n"},
        {"approved": False, "reason": "too risky"},
    ),
    ("requestApproval", "hitl_reject", {}, {"approved": False}),
    ("selectOption", "hitl_select", {"choice": "2"}, {"selectedIndex": 2, "selectedValue": "blue"}),
    (
        "collectUserData",
        "hitl_submit",
        {"age": "42", "height": "1.75", "email": "a@b.co", "city": "Oslo & <b>"},
        {"age": 42, "height": 1.75, "email": "a@b.co", "city": "Oslo & <b>"},
    ),
    (
        "uploadFile",
        "hitl_upload",
        {"url": "https://contoso.sharepoint.com/sites/x/Shared%20Documents/Invoice%201.pdf"},
        {
            "fileName": "Invoice 1.pdf",
            "fileSize": 0,
            "url": "https://contoso.sharepoint.com/sites/x/Shared%20Documents/Invoice%201.pdf",
        },
    ),
    ("confirmAction", "hitl_confirm", {}, {"confirmed": True}),
    ("confirmAction", "hitl_cancel", {}, {"confirmed": False}),
]


@pytest.mark.parametrize(("tool_name", "verb", "entered", "expected"), ROUND_TRIPS)
def test_every_action_round_trips(
    tool_name: str, verb: str, entered: dict[str, str], expected: dict[str, Any]
) -> None:
    value = invoke_value(_live(tool_name), verb, entered)
    action = parse_action(value)
    assert (action.verb, action.request_id, action.trigger) == (verb, REQUEST_ID, "manual")
    answer = answer_from_action(action, ARGS[tool_name], BUILTIN_TOOLS[tool_name])
    assert isinstance(answer, str)
    assert json.loads(answer) == expected
    # What the core will accept: its own validator, unchanged, and nothing to normalise.
    assert BUILTIN_TOOLS[tool_name].parse_answer(ARGS[tool_name], answer) == answer


@pytest.mark.parametrize(
    "tool_name", ["AskUserQuestion", "selectOption", "collectUserData", "uploadFile"]
)
def test_decline_carries_the_optional_reason(tool_name: str) -> None:
    assert _answer(tool_name, "hitl_decline", {"reason": "  not my call "}) == Decline(
        "not my call"
    )
    assert _answer(tool_name, "hitl_decline") == Decline(None)


def test_decline_is_sent_whatever_the_other_inputs_hold() -> None:
    # Nothing on the card is required, so Teams lets Decline through with the form empty.
    assert _answer("collectUserData", "hitl_decline", {"age": "x"}) == Decline(None)


@pytest.mark.parametrize("trigger", ["automatic", "manual"])
def test_refresh_gives_no_answer(trigger: str) -> None:
    card = _live("AskUserQuestion")
    action = parse_action(invoke_value(card, "hitl_refresh", trigger=trigger))
    assert action == CardAction(Verb.REFRESH, REQUEST_ID, trigger, {})
    assert action.verb == "hitl_refresh"  # a plain str to callers
    assert (
        answer_from_action(action, ARGS["AskUserQuestion"], BUILTIN_TOOLS["AskUserQuestion"])
        is None
    )


def test_action_carries_every_input_as_sent() -> None:
    value = invoke_value(_live("collectUserData"), "hitl_submit", {"age": "42", "city": "Oslo"})
    action = parse_action(value)
    assert action.inputs == {"age": "42", "height": "", "email": "", "city": "Oslo", "reason": ""}


def test_reserved_field_names_round_trip() -> None:
    fields = [{"name": "reason", "label": "Why"}, {"name": "request_id", "label": "Ticket"}]
    args = {"fields": fields}
    entered = {"field.reason": "because", "field.request_id": "T-7", "reason": "decline text"}
    value = invoke_value(_live("collectUserData", args), "hitl_submit", entered)
    assert value["action"]["data"]["request_id"] == REQUEST_ID  # not overwritten by the field
    answer = answer_from_action(parse_action(value), args, BUILTIN_TOOLS["collectUserData"])
    assert isinstance(answer, str)
    assert json.loads(answer) == {"reason": "because", "request_id": "T-7"}


def test_numbers_sent_as_json_numbers_are_read_as_strings() -> None:
    value = invoke_value(_live("collectUserData"), "hitl_submit")
    value["action"]["data"].update(age=42, height=1.75, email="a@b.co", city="Oslo", x=True, y=None)
    action = parse_action(value)
    assert (action.inputs["age"], action.inputs["height"]) == ("42", "1.75")
    assert "x" not in action.inputs and "y" not in action.inputs
    answer = answer_from_action(action, ARGS["collectUserData"], BUILTIN_TOOLS["collectUserData"])
    assert isinstance(answer, str) and json.loads(answer)["height"] == 1.75


def test_omitted_inputs_read_as_empty() -> None:
    value = {
        "action": {
            "type": "Action.Execute",
            "verb": "hitl_answer",
            "data": {"request_id": REQUEST_ID},
        }
    }
    action = parse_action(value)
    assert action.trigger == "manual"
    assert answer_from_action(
        action, ARGS["AskUserQuestion"], BUILTIN_TOOLS["AskUserQuestion"]
    ) == {"answer": "Required"}


# -- errors shown in the card ----------------------------------------------------------------------


def test_form_errors_land_on_their_inputs() -> None:
    entered = {"age": "abc", "height": "2", "email": "nope", "city": "  "}
    assert _answer("collectUserData", "hitl_submit", entered) == {
        "age": "Enter a number",
        "email": "Enter a valid email address",
        "city": "Required",
    }


def test_form_errors_use_the_input_ids_of_reserved_names() -> None:
    args = {"fields": [{"name": "reason", "label": "Why", "type": "number"}]}
    assert _answer("collectUserData", "hitl_submit", {"field.reason": "x"}, args) == {
        "field.reason": "Enter a number"
    }


@pytest.mark.parametrize("number", ["nan", "inf", "1e400", "0x10", "true"])
def test_form_numbers_must_be_finite(number: str) -> None:
    entered = {"age": number, "height": "1", "email": "a@b.co", "city": "c"}
    assert _answer("collectUserData", "hitl_submit", entered) == {"age": "Enter a number"}


def test_select_without_a_choice_asks_for_one() -> None:
    assert _answer("selectOption", "hitl_select") == {"choice": "Choose one of the options"}


@pytest.mark.parametrize(
    "choice", ["3", "-1", "x", "1.0", "0001", "\uff11"]
)  # the last: a fullwidth 1
def test_an_option_not_offered_is_refused(choice: str) -> None:
    value = invoke_value(_live("selectOption"), "hitl_select")
    value["action"]["data"]["choice"] = choice
    with pytest.raises(ActionError, match="not offered"):
        answer_from_action(parse_action(value), ARGS["selectOption"], BUILTIN_TOOLS["selectOption"])


def test_blank_answer_is_required() -> None:
    assert _answer("AskUserQuestion", "hitl_answer", {"answer": " \n "}) == {"answer": "Required"}


@pytest.mark.parametrize(
    ("entered", "accepted", "error"),
    [
        ({}, [".pdf"], ("url", "Paste a link to the file")),
        ({"url": "http://x.example/a.pdf"}, [], ("url", "https://")),
        ({"url": "javascript:alert(1)//a.pdf"}, [], ("url", "https://")),
        ({"url": "https:///a.pdf"}, [], ("url", "https://")),
        ({"url": "https://[::1/a.pdf"}, [], ("url", "https://")),
        ({"url": "https://good.example@evil.example/a.pdf"}, [], ("url", "user name")),
        ({"url": "https://x.example/a b.pdf"}, [], ("url", "no spaces")),
        ({"url": "https://x.example/" + "a" * 2100 + ".pdf"}, [], ("url", "https://")),
        (
            {"url": "https://x.example/tool.exe"},
            [".pdf"],
            ("file_name", "Not an accepted file type"),
        ),
        ({"url": "https://x.example/"}, [], ("file_name", "Enter the file's name")),
        (
            {"url": "https://x.example/a.pdf", "file_name": "notes.txt"},
            [".pdf"],
            ("file_name", "Not an accepted file type (accepted: .pdf)"),
        ),
        (
            {"url": "https://contoso.sharepoint.com/:b:/g/EaBcD?e=1"},
            [".pdf"],
            ("file_name", "Enter the file's name (accepted: .pdf)"),
        ),
        (
            {"url": "https://x.example/a.pdf", "file_name": "n" * 256},
            [],
            ("file_name", "at most 255"),
        ),
    ],
)
def test_upload_errors_land_on_their_inputs(
    entered: dict[str, str], accepted: list[str], error: tuple[str, str]
) -> None:
    args = {"purpose": "p", "acceptedTypes": accepted}
    answer = _answer("uploadFile", "hitl_upload", entered, args)
    assert isinstance(answer, dict) and list(answer) == [error[0]]
    assert error[1] in answer[error[0]]


def test_upload_name_typed_for_a_sharing_link() -> None:
    url = "https://contoso.sharepoint.com/:b:/g/personal/ada/EaBcD?e=1"
    entered = {"url": url, "file_name": "Invoice.PDF"}
    answer = _answer("uploadFile", "hitl_upload", entered)
    assert isinstance(answer, str)
    assert json.loads(answer) == {"fileName": "Invoice.PDF", "fileSize": 0, "url": url}


def test_upload_accepts_a_mime_type_entry() -> None:
    args = {"purpose": "p", "acceptedTypes": ["image/*"]}
    answer = _answer("uploadFile", "hitl_upload", {"url": "https://x.example/photo.png"}, args)
    assert isinstance(answer, str) and json.loads(answer)["fileName"] == "photo.png"


# -- custom tools ----------------------------------------------------------------------------------


class Ticket(BaseModel):
    status: str
    priority: int


class Note(BaseModel):
    note: str


def test_custom_tool_with_several_answer_fields_takes_json() -> None:
    tool = HumanTool("lookupTicket", "d", BaseModel, Ticket)
    args = {"t": 1}
    prose = _answer("lookupTicket", "hitl_answer", {"answer": "it is open"}, args, tool)
    assert prose == {"answer": "Answer with a JSON object"}
    partial = _answer("lookupTicket", "hitl_answer", {"answer": '{"status": "open"}'}, args, tool)
    assert isinstance(partial, dict) and "priority" in partial["answer"]
    good = _answer(
        "lookupTicket", "hitl_answer", {"answer": '{"status": "open", "priority": 2}'}, args, tool
    )
    assert isinstance(good, str) and json.loads(good) == {"status": "open", "priority": 2}


def test_custom_tool_with_one_text_field_wraps_the_text() -> None:
    tool = HumanTool("takeNote", "d", BaseModel, Note)
    answer = _answer("takeNote", "hitl_answer", {"answer": "remember"}, {"t": 1}, tool)
    assert isinstance(answer, str) and json.loads(answer) == {"note": "remember"}


def test_custom_tool_without_a_model_gets_the_text() -> None:
    assert _answer("freeform", "hitl_answer", {"answer": "just <text>"}, {"t": 1}) == "just <text>"


def test_custom_tool_declines_too() -> None:
    assert _answer("freeform", "hitl_decline", {"reason": "no"}, {"t": 1}) == Decline("no")


# -- what is refused -------------------------------------------------------------------------------


def _value(**action: Any) -> dict[str, Any]:
    base = {"type": "Action.Execute", "verb": "hitl_answer", "data": {"request_id": REQUEST_ID}}
    return {"action": {**base, **action}, "trigger": "manual"}


@pytest.mark.parametrize(
    "value",
    [
        None,
        {},
        {"action": "hitl_answer"},
        _value(type="Action.Submit"),
        _value(verb="someone_elses_verb"),
        _value(verb="hitl_frobnicate"),
        _value(verb=None),
        _value(verb={"hitl": "answer"}),
        _value(verb="HITL_ANSWER"),
        _value(data={}),
        _value(data={"request_id": ""}),
        _value(data={"request_id": 42}),
        _value(data={"request_id": "x" * 201}),
        _value(data="request_id"),
    ],
)
def test_foreign_or_broken_values_are_refused(value: Any) -> None:
    with pytest.raises(ActionError):
        parse_action(value)


@pytest.mark.parametrize(
    ("verb", "tool_name"),
    [
        ("hitl_approve", "selectOption"),
        ("hitl_confirm", "requestApproval"),
        ("hitl_select", "AskUserQuestion"),
        ("hitl_submit", "uploadFile"),
        ("hitl_upload", "collectUserData"),
        ("hitl_answer", "requestApproval"),
        ("hitl_answer", "selectOption"),
        ("hitl_decline", "requestApproval"),  # their cards have Reject / Cancel instead
        ("hitl_decline", "confirmAction"),
    ],
)
def test_a_verb_the_card_does_not_have_is_refused(verb: str, tool_name: str) -> None:
    action = CardAction(Verb(verb), REQUEST_ID, "manual", {})
    with pytest.raises(ActionError, match="does not apply"):
        answer_from_action(action, ARGS[tool_name], BUILTIN_TOOLS[tool_name])


def test_a_submit_for_a_form_without_fields_is_refused() -> None:
    action = CardAction(Verb.SUBMIT, REQUEST_ID, "manual", {})
    with pytest.raises(ActionError, match="no fields"):
        answer_from_action(action, {"fields": []}, BUILTIN_TOOLS["collectUserData"])


def test_without_a_tool_a_builtin_verb_uses_the_builtin() -> None:
    action = CardAction(Verb.SELECT, REQUEST_ID, "manual", {"choice": "1"})
    answer = answer_from_action(action, ARGS["selectOption"], None)
    assert isinstance(answer, str)
    assert json.loads(answer) == {"selectedIndex": 1, "selectedValue": "green"}


def test_decline_reason_is_cut_to_the_inputs_length() -> None:
    action = CardAction(Verb.DECLINE, REQUEST_ID, "manual", {"reason": "r" * 5_000})
    answer = answer_from_action(action, ARGS["AskUserQuestion"], BUILTIN_TOOLS["AskUserQuestion"])
    assert isinstance(answer, Decline) and answer.reason == "r" * 2_000


def test_errors_come_back_into_the_live_card() -> None:
    """The loop the surface runs: errors and the person's values go back into the card."""
    card = _live("collectUserData")
    entered = {"age": "abc", "height": "2", "email": "a@b.co", "city": "Oslo"}
    action = parse_action(invoke_value(card, "hitl_submit", entered))
    errors = answer_from_action(action, ARGS["collectUserData"], BUILTIN_TOOLS["collectUserData"])
    assert errors == {"age": "Enter a number"}
    again = render_card(
        make_update("collectUserData", ARGS["collectUserData"]),
        live=True,
        error=errors,
        values=action.inputs,
    )
    assert any(e.get("text") == "⚠️ Age: Enter a number" for e in again["body"])
    assert [i.get("value") for i in inputs(again)] == [None, 2, "a@b.co", "Oslo", None]
    fixed = {**entered, "age": "41"}
    answer = answer_from_action(
        parse_action(invoke_value(again, "hitl_submit", fixed)),
        ARGS["collectUserData"],
        BUILTIN_TOOLS["collectUserData"],
    )
    assert isinstance(answer, str) and json.loads(answer)["age"] == 41
