"""Interaction payloads in Slack's wire shape, read back; answers checked by the core's models.

The bodies are built from what `render` produced, the way Slack echoes it back (the shapes of
slack_bolt's own block_actions / view_submission scenario tests), so the scheme round-trips.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from adapters.slack.parse import (
    ButtonClick,
    ModalSubmission,
    PayloadError,
    answer_from_click,
    answer_from_submission,
    parse_block_action,
    parse_view_submission,
)
from adapters.slack.render import MODAL_OF_VERB, ModalKind, Verb, render_message, render_modal
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools import BUILTIN_TOOLS, HumanTool
from tests.adapters.slack.blockkit_rules import interactive_elements, walk

REQUEST_ID = "0123456789abcdef01234567"
ACTOR = "U123ACTOR"
CHANNEL = "C0123CHAN"
THREAD_TS = "1700000000.000100"
MESSAGE_TS = "1700000005.000200"
TRIGGER = "111.222.trigger"

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
        room_id=f"{CHANNEL}:{THREAD_TS}",
        tool_call_id="toolu_1",
        channel_id="slack",
        channel_type="ai",
        actor_id=ACTOR,
        created_at=now,
        expires_at=now + timedelta(minutes=5),
    )


# -- Slack's payloads ----------------------------------------------------------------------------

USER = {"id": ACTOR, "username": "ada", "name": "ada", "team_id": "T0123"}
TEAM = {"id": "T0123", "domain": "example"}


def _find(blocks: list[dict[str, Any]], action_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    for block in blocks:
        for element in interactive_elements([block]):
            if element["action_id"] == action_id:
                return block, element
    raise LookupError(action_id)


def click_body(
    blocks: list[dict[str, Any]], action_id: str, *, option: int = 0, thread: bool = True
) -> dict[str, Any]:
    """A block_actions body as Slack sends it for a click on one of `blocks`."""
    block, element = _find(blocks, action_id)
    action: dict[str, Any] = {
        "type": element["type"],
        "action_id": action_id,
        "block_id": block.get("block_id", "Xk3q"),  # Slack makes one up when we set none
        "action_ts": "1700000010.000300",
    }
    if element["type"] == "button":
        action.update(text=element["text"], value=element["value"])
    else:
        action.update(selected_option=element["options"][option])
        action.update(placeholder=element["placeholder"])
    message = {
        "type": "message",
        "ts": MESSAGE_TS,
        "user": "UBOT",
        "bot_id": "B1",
        "blocks": blocks,
    }
    container = {"type": "message", "message_ts": MESSAGE_TS, "channel_id": CHANNEL}
    if thread:
        message["thread_ts"] = container["thread_ts"] = THREAD_TS
    return {
        "type": "block_actions",
        "user": USER,
        "api_app_id": "A0123",
        "token": "verification_token",
        "container": {**container, "is_ephemeral": False},
        "trigger_id": TRIGGER,
        "team": TEAM,
        "channel": {"id": CHANNEL, "name": "general"},
        "message": message,
        "state": {"values": {}},
        "response_url": "https://hooks.slack.com/actions/T0123/1/x",
        "actions": [action],
    }


def _state(element: dict[str, Any], value: Any) -> dict[str, Any]:
    if element["type"] == "file_input":
        return {"type": "file_input", "files": value}
    return {"type": element["type"], "value": value}


def submission_body(view: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A view_submission body for `view` with `values` (block_id -> what the person entered)."""
    state = {
        block["block_id"]: {
            block["element"]["action_id"]: _state(block["element"], values.get(block["block_id"]))
        }
        for block in view["blocks"]
        if block["type"] == "input"
    }
    echoed = {k: view[k] for k in ("type", "blocks", "private_metadata", "callback_id", "title")}
    return {
        "type": "view_submission",
        "team": TEAM,
        "user": USER,
        "api_app_id": "A0123",
        "token": "verification_token",
        "trigger_id": TRIGGER,
        "view": {
            **echoed,
            "id": "V0123",
            "team_id": "T0123",
            "state": {"values": state},
            "hash": "1700000000.abc",
            "previous_view_id": None,
            "root_view_id": "V0123",
            "app_id": "A0123",
        },
        "response_urls": [],
        "is_enterprise_install": False,
    }


def slack_file(name: str = "invoice.pdf", mimetype: str = "application/pdf") -> dict[str, Any]:
    return {
        "id": "F0123",
        "name": name,
        "title": name,
        "mimetype": mimetype,
        "filetype": name.rpartition(".")[2],
        "size": 12345,
        "url_private": f"https://files.slack.com/files-pri/T0123-F0123/{name}",
        "permalink": f"https://example.slack.com/files/U1/F0123/{name}",
    }


def _blocks(tool_name: str, arguments: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return render_message(make_update(tool_name, arguments or ARGS[tool_name])).blocks


def _submit(kind: str, tool_name: str, values: dict[str, Any], args: dict[str, Any] | None = None,
            tool: HumanTool | None = None) -> tuple[ModalSubmission, Any]:  # fmt: skip
    arguments = args or ARGS.get(tool_name, {})
    view = render_modal(kind, make_update(tool_name, arguments), tool)
    sub = parse_view_submission(submission_body(view, values))
    return sub, answer_from_submission(sub, arguments, tool or BUILTIN_TOOLS.get(tool_name))


# -- clicks ----------------------------------------------------------------------------------------

CLICKS = [
    ("requestApproval", "hitl_approve", {"approved": True}),
    ("requestApproval", "hitl_reject", None),
    ("selectOption", "hitl_option_0", {"selectedIndex": 0, "selectedValue": "red"}),
    ("selectOption", "hitl_option_2", {"selectedIndex": 2, "selectedValue": "blue"}),
    ("confirmAction", "hitl_confirm", {"confirmed": True}),
    ("confirmAction", "hitl_cancel", {"confirmed": False}),
    ("AskUserQuestion", "hitl_answer", None),
    ("collectUserData", "hitl_open_form", None),
    ("uploadFile", "hitl_upload", None),
]


@pytest.mark.parametrize(("tool_name", "action_id", "answer"), CLICKS)
def test_every_button_round_trips(tool_name: str, action_id: str, answer: Any) -> None:
    click = parse_block_action(click_body(_blocks(tool_name), action_id))
    assert click.request_id == REQUEST_ID
    assert click.action_id == action_id
    result = answer_from_click(click, ARGS[tool_name], tool_name)
    if answer is None:
        assert result is None
        assert click.verb in MODAL_OF_VERB
    else:
        assert result is not None
        assert json.loads(result) == answer
        # What the core will accept: its own validator, unchanged.
        assert json.loads(BUILTIN_TOOLS[tool_name].parse_answer(ARGS[tool_name], result)) == answer


def test_click_carries_who_where_and_trigger() -> None:
    click = parse_block_action(click_body(_blocks("requestApproval"), "hitl_approve"))
    assert click == ButtonClick(
        request_id=REQUEST_ID,
        verb=Verb.APPROVE,
        action_id="hitl_approve",
        option_index=None,
        user_id=ACTOR,
        trigger_id=TRIGGER,
        channel_id=CHANNEL,
        message_ts=MESSAGE_TS,
        thread_ts=THREAD_TS,
        response_url="https://hooks.slack.com/actions/T0123/1/x",
    )


def test_click_outside_a_thread_has_no_thread_ts() -> None:
    body = click_body(_blocks("requestApproval"), "hitl_approve", thread=False)
    assert parse_block_action(body).thread_ts is None


def test_static_select_round_trips_through_block_id() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(7)]}
    body = click_body(_blocks("selectOption", args), "hitl_select", option=6)
    click = parse_block_action(body)
    assert (click.request_id, click.verb, click.option_index) == (REQUEST_ID, Verb.SELECT, 6)
    answer = answer_from_click(click, args, "selectOption")
    assert answer is not None
    assert json.loads(answer) == {"selectedIndex": 6, "selectedValue": "o6"}


def test_modal_verbs_name_their_modal() -> None:
    assert MODAL_OF_VERB == {
        Verb.REJECT: ModalKind.REJECT_REASON,
        Verb.ANSWER: ModalKind.ANSWER,
        Verb.OPEN_FORM: ModalKind.FORM,
        Verb.UPLOAD: ModalKind.UPLOAD,
    }


def test_custom_tool_answer_button_opens_a_modal() -> None:
    blocks = render_message(make_update("lookupTicket", {"t": 1})).blocks
    click = parse_block_action(click_body(blocks, "hitl_answer"))
    assert answer_from_click(click, {"t": 1}, "lookupTicket") is None


@pytest.mark.parametrize(
    ("tool_name", "action_id", "arguments"),
    [
        ("requestApproval", "hitl_approve", {"question": "q", "options": ["a"]}),
        ("confirmAction", "hitl_confirm", ARGS["requestApproval"]),
        ("AskUserQuestion", "hitl_answer", ARGS["requestApproval"]),
    ],
)
def test_a_verb_of_another_tool_is_refused(
    tool_name: str, action_id: str, arguments: dict[str, Any]
) -> None:
    click = parse_block_action(click_body(_blocks(tool_name), action_id))
    other = {"hitl_approve": "selectOption", "hitl_confirm": "requestApproval"}
    with pytest.raises(PayloadError):
        answer_from_click(click, arguments, other.get(action_id, "requestApproval"))


def test_an_option_not_offered_is_refused() -> None:
    click = parse_block_action(click_body(_blocks("selectOption"), "hitl_option_2"))
    with pytest.raises(PayloadError, match="not offered"):
        answer_from_click(click, {"question": "q", "options": ["only"]}, "selectOption")


def _with_action(**action: Any) -> dict[str, Any]:
    body = click_body(_blocks("requestApproval"), "hitl_approve")
    body["actions"] = [{**body["actions"][0], **action}]
    return body


@pytest.mark.parametrize(
    "body",
    [
        _with_action(action_id="someone_elses_button"),
        _with_action(action_id="hitl_option"),
        _with_action(action_id="hitl_option_x"),
        _with_action(action_id="hitl_frobnicate"),
        _with_action(value=""),
        _with_action(type="static_select", action_id="hitl_select", block_id="other"),
        _with_action(
            action_id="hitl_select",
            block_id=f"hitl_actions:{REQUEST_ID}",
            selected_option={"value": "-1"},
        ),
        {**_with_action(), "user": {}},
        {**_with_action(), "actions": []},
        {"type": "block_actions"},
    ],
)
def test_foreign_or_broken_clicks_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(PayloadError):
        parse_block_action(body)


# -- modal submissions -------------------------------------------------------------------------


def test_submission_carries_kind_request_user_and_values() -> None:
    view = render_modal("form", make_update("collectUserData", ARGS["collectUserData"]))
    values = {"age": "42", "height": "1.75", "email": "a@b.co", "city": "Oslo"}
    sub = parse_view_submission(submission_body(view, values))
    assert sub.kind is ModalKind.FORM
    assert (sub.request_id, sub.user_id, sub.view_id) == (REQUEST_ID, ACTOR, "V0123")
    assert sub.values == values  # numbers stay strings, as Slack sends them


def test_form_answer_is_typed_by_the_core_model() -> None:
    values = {"age": "42", "height": "1.75", "email": "a@b.co", "city": "Oslo & <b>"}
    _, answer = _submit("form", "collectUserData", values)
    assert json.loads(answer) == {
        "age": 42,
        "height": 1.75,
        "email": "a@b.co",
        "city": "Oslo & <b>",
    }
    assert BUILTIN_TOOLS["collectUserData"].parse_answer(ARGS["collectUserData"], answer) == answer


def test_form_errors_land_on_their_fields() -> None:
    values = {"age": "abc", "height": "2", "email": "nope", "city": None}
    _, answer = _submit("form", "collectUserData", values)
    assert answer == {
        "age": "Enter a number",
        "email": "Enter a valid email address",
        "city": "Required",
    }


def test_reject_reason_is_optional() -> None:
    _, with_reason = _submit("reject_reason", "requestApproval", {"reason": "  too risky \n"})
    assert json.loads(with_reason) == {"approved": False, "reason": "too risky"}
    _, without = _submit("reject_reason", "requestApproval", {"reason": None})
    assert json.loads(without) == {"approved": False}


def test_question_answer_and_blank_answer() -> None:
    _, answer = _submit("answer", "AskUserQuestion", {"answer": "eu-west"})
    assert json.loads(answer) == {"answer": "eu-west"}
    _, blank = _submit("answer", "AskUserQuestion", {"answer": "   "})
    assert blank == {"answer": "Required"}


class Ticket(BaseModel):
    status: str
    priority: int


class Note(BaseModel):
    note: str


def test_custom_tool_with_several_answer_fields_takes_json() -> None:
    tool = HumanTool("lookupTicket", "d", BaseModel, Ticket)
    _, prose = _submit("answer", "lookupTicket", {"answer": "it is open"}, {"t": 1}, tool)
    assert prose == {"answer": "Answer with a JSON object"}
    _, partial = _submit("answer", "lookupTicket", {"answer": '{"status": "open"}'}, {"t": 1}, tool)
    assert isinstance(partial, dict) and "priority" in partial["answer"]
    _, good = _submit(
        "answer", "lookupTicket", {"answer": '{"status": "open", "priority": 2}'}, {"t": 1}, tool
    )
    assert json.loads(good) == {"status": "open", "priority": 2}


def test_custom_tool_with_one_text_field_wraps_the_text() -> None:
    tool = HumanTool("takeNote", "d", BaseModel, Note)
    _, answer = _submit("answer", "takeNote", {"answer": "remember"}, {"t": 1}, tool)
    assert json.loads(answer) == {"note": "remember"}


def test_custom_tool_without_a_model_gets_the_text() -> None:
    _, answer = _submit("answer", "freeform", {"answer": "just <text>"}, {"t": 1})
    assert answer == "just <text>"


def test_upload_answer_from_the_slack_file() -> None:
    sub, answer = _submit("upload", "uploadFile", {"file": [slack_file()]})
    assert sub.values["file"] == [slack_file()]
    assert json.loads(answer) == {
        "fileName": "invoice.pdf",
        "fileSize": 12345,
        "url": "https://files.slack.com/files-pri/T0123-F0123/invoice.pdf",
    }
    assert BUILTIN_TOOLS["uploadFile"].parse_answer(ARGS["uploadFile"], answer) == answer


@pytest.mark.parametrize(
    ("files", "accepted", "error"),
    [
        ([slack_file("tool.exe", "application/octet-stream")], [".pdf"], "Accepted file types"),
        ([], [".pdf"], "Upload a file"),
        (None, [], "Upload a file"),
        ([{**slack_file(), "size": None}], [], "fileSize"),
    ],
)
def test_upload_errors_land_on_the_file_input(files: Any, accepted: list[str], error: str) -> None:
    args = {"purpose": "p", "acceptedTypes": accepted}
    _, answer = _submit("upload", "uploadFile", {"file": files}, args)
    assert isinstance(answer, dict) and list(answer) == ["file"]
    assert error in answer["file"]


def test_upload_accepts_a_mime_type_entry() -> None:
    args = {"purpose": "p", "acceptedTypes": ["application/pdf"]}
    _, answer = _submit("upload", "uploadFile", {"file": [slack_file("Report.PDF")]}, args)
    assert json.loads(answer)["fileName"] == "Report.PDF"


def test_the_core_check_of_the_file_has_the_last_word() -> None:
    # The adapter lets the file through on its MIME type; uploadFile's own check_answer (by
    # extension) refuses it, and that verdict lands on the file input too.
    args = {"purpose": "p", "acceptedTypes": ["application/x-ledger"]}
    file = slack_file("books", "application/x-ledger")
    _, answer = _submit("upload", "uploadFile", {"file": [file]}, args)
    assert isinstance(answer, dict) and "not one of the accepted types" in answer["file"]


def _submission(**view: Any) -> dict[str, Any]:
    modal = render_modal("answer", make_update("AskUserQuestion", ARGS["AskUserQuestion"]))
    body = submission_body(modal, {"answer": "x"})
    body["view"] = {**body["view"], **view}
    return body


@pytest.mark.parametrize(
    "body",
    [
        _submission(callback_id="someone_elses_modal"),
        _submission(callback_id="hitl_modal:nope"),
        _submission(private_metadata=""),
        {**_submission(), "user": None},
        {"type": "view_submission"},
    ],
)
def test_foreign_or_broken_submissions_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(PayloadError):
        parse_view_submission(body)


def test_state_without_values_reads_as_empty() -> None:
    sub = parse_view_submission(_submission(state={}))
    assert sub.values == {}
    assert answer_from_submission(sub, ARGS["AskUserQuestion"], None) == {"answer": "Required"}


def test_every_modal_input_is_read_back() -> None:
    """Each input block the modals render comes back under its block_id."""
    for kind, tool_name in [
        ("reject_reason", "requestApproval"),
        ("answer", "AskUserQuestion"),
        ("form", "collectUserData"),
        ("upload", "uploadFile"),
    ]:
        view = render_modal(kind, make_update(tool_name, ARGS[tool_name]))
        inputs = [b["block_id"] for b in view["blocks"] if b["type"] == "input"]
        sub = parse_view_submission(submission_body(view, dict.fromkeys(inputs, "v")))
        assert sorted(sub.values) == sorted(inputs)
        assert [n for n in walk(view) if n == f"hitl_modal:{kind}"]
