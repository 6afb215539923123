"""Interaction payloads in Slack's wire shape, read back into the core's `Interaction`.

The bodies are built from what `messages` and `modals` drew, the way Slack echoes them back
(the shapes of slack_bolt's own block_actions / view_submission scenario tests), so the scheme
round-trips; the inputs a modal gives are then read by the core's own `read_form`.
"""

from __future__ import annotations

from typing import Any

import pytest

from adapters.surfaces.slack.messages import render_message
from adapters.surfaces.slack.modals import render_modal
from adapters.surfaces.slack.parse import (
    Click,
    PayloadError,
    click_essentials,
    parse_block_action,
    parse_stop_click,
    parse_view_submission,
)
from adapters.surfaces.slack.run_chunks import STREAM_TEXT, stop_chunk, text_pieces
from bot.human_tools.forms import read_form
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.requests.kinds import DECLINE_FORM, Verb
from bot.requests.router import Interaction
from tests.adapters.surfaces.slack.blockkit_rules import interactive_elements
from tests.adapters.surfaces.slack.test_modals import EVERY_FORM
from tests.adapters.surfaces.slack.updates import ACTOR, REQUEST_ID, make_update

pytestmark = pytest.mark.fast  # pure functions: in `make check`

CHANNEL = "C0123CHAN"
THREAD_TS = "1700000000.000100"
MESSAGE_TS = "1700000005.000200"
TRIGGER = "111.222.trigger"

ARGS: dict[str, dict[str, Any]] = {
    "AskUserQuestion": {"question": "Which region?"},
    "requestApproval": {"action": "Deploy", "reason": "Release 1.2"},
    "selectOption": {"question": "Pick", "options": ["red", "green", "blue"]},
    "collectUserData": {"fields": [{"name": "age", "label": "Age", "type": "number"}]},
    "uploadFile": {"purpose": "Invoice", "acceptedTypes": [".pdf", "image/png"]},
    "confirmAction": {"title": "Drop", "message": "Drop it?", "severity": "danger"},
}

USER = {"id": ACTOR, "username": "ada", "name": "ada", "team_id": "T0123"}
TEAM = {"id": "T0123", "domain": "example"}


# -- Slack's payloads ----------------------------------------------------------------------------


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
    message = {"type": "message", "ts": MESSAGE_TS, "user": "UBOT", "bot_id": "B1",
               "blocks": blocks}  # fmt: skip
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


def _option(element: dict[str, Any], value: str) -> dict[str, Any]:
    return next(o for o in element["options"] if o["value"] == value)


def slack_state(element: dict[str, Any], value: Any) -> dict[str, Any]:
    """What Slack reports in view.state for `element` when the person entered `value` (None:
    left empty): option values for selects and radio buttons, file objects for file_input."""
    kind = element["type"]
    state: dict[str, Any] = {"type": kind}
    if kind == "datepicker":
        state["selected_date"] = value
    elif kind == "timepicker":
        state["selected_time"] = value
    elif kind == "datetimepicker":
        state["selected_date_time"] = value
    elif kind in ("static_select", "radio_buttons"):
        state["selected_option"] = _option(element, value) if value is not None else None
    elif kind == "multi_static_select":
        state["selected_options"] = [_option(element, v) for v in value or []]
    elif kind == "users_select":
        state["selected_user"] = value
    elif kind == "file_input":
        state["files"] = value or []
    else:
        state["value"] = value
    return state


def submission_body(view: dict[str, Any], values: dict[str, Any]) -> dict[str, Any]:
    """A view_submission body for `view` with `values` (block_id -> what the person entered)."""
    state = {
        block["block_id"]: {
            block["element"]["action_id"]: slack_state(
                block["element"], values.get(block["block_id"])
            )
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
    update = make_update(tool_name, arguments or ARGS[tool_name])
    return render_message(update, BUILTIN_TOOLS[tool_name]).blocks


# -- clicks ----------------------------------------------------------------------------------------

CLICKS = [
    ("requestApproval", "hitl_approve", Verb.APPROVE, {}, False),
    ("requestApproval", "hitl_decline", Verb.DECLINE, {}, False),
    ("selectOption", "hitl_choose_0", Verb.CHOOSE, {"choice": "0"}, True),
    ("selectOption", "hitl_choose_2", Verb.CHOOSE, {"choice": "2"}, True),
    ("confirmAction", "hitl_confirm", Verb.CONFIRM, {}, False),
    ("confirmAction", "hitl_cancel", Verb.CANCEL, {}, False),
    ("AskUserQuestion", "hitl_answer", Verb.ANSWER, {}, False),
    ("collectUserData", "hitl_submit", Verb.SUBMIT, {}, False),
    ("uploadFile", "hitl_submit", Verb.SUBMIT, {}, False),
    ("uploadFile", "hitl_decline", Verb.DECLINE, {}, False),
]


@pytest.mark.parametrize(("tool_name", "action_id", "verb", "inputs", "submitted"), CLICKS)
def test_every_button_round_trips(
    tool_name: str, action_id: str, verb: Verb, inputs: dict[str, Any], submitted: bool
) -> None:
    interaction = parse_block_action(click_body(_blocks(tool_name), action_id)).interaction
    assert interaction == Interaction(
        REQUEST_ID, ACTOR, verb, inputs, submitted=submitted, surface="slack", name="ada"
    )


def test_click_carries_who_where_and_trigger() -> None:
    click = parse_block_action(click_body(_blocks("requestApproval"), "hitl_approve"))
    assert click == Click(
        interaction=Interaction(
            REQUEST_ID, ACTOR, Verb.APPROVE, {}, submitted=False, surface="slack", name="ada"
        ),
        trigger_id=TRIGGER,
        channel_id=CHANNEL,
        message_ts=MESSAGE_TS,
        thread_ts=THREAD_TS,
    )


@pytest.mark.parametrize("thread", [True, False])
@pytest.mark.parametrize(("tool_name", "action_id"), [(c[0], c[1]) for c in CLICKS])
def test_what_is_kept_of_a_click_reads_as_the_click(
    tool_name: str, action_id: str, thread: bool
) -> None:
    body = click_body(_blocks(tool_name), action_id, thread=thread)
    kept = click_essentials(body)
    assert parse_block_action(kept) == parse_block_action(body)
    assert set(kept["message"]) == ({"ts", "thread_ts"} if thread else {"ts"})  # no blocks


def test_a_select_is_kept_as_it_reads() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(7)]}
    body = click_body(_blocks("selectOption", args), "hitl_choose", option=6)
    assert parse_block_action(click_essentials(body)) == parse_block_action(body)


def test_click_outside_a_thread_has_no_thread_ts() -> None:
    body = click_body(_blocks("requestApproval"), "hitl_approve", thread=False)
    assert parse_block_action(body).thread_ts is None


def test_static_select_round_trips_through_block_id() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(7)]}
    body = click_body(_blocks("selectOption", args), "hitl_choose", option=6)
    interaction = parse_block_action(body).interaction
    assert (interaction.request_id, interaction.verb) == (REQUEST_ID, Verb.CHOOSE)
    assert (interaction.inputs, interaction.submitted) == ({"choice": "6"}, True)


@pytest.mark.parametrize(
    ("action", "verb", "inputs"),
    [
        ({"action_id": "hitl_reject"}, Verb.DECLINE, {}),
        ({"action_id": "hitl_option_1"}, Verb.CHOOSE, {"choice": "1"}),
        ({"action_id": "hitl_open_form"}, Verb.SUBMIT, {}),
        ({"action_id": "hitl_upload"}, Verb.SUBMIT, {}),
        ({"action_id": "hitl_select", "type": "static_select",
          "block_id": f"hitl_actions:{REQUEST_ID}", "selected_option": {"value": "3"}},
         Verb.CHOOSE, {"choice": "3"}),
    ],
)  # fmt: skip
def test_buttons_of_messages_posted_before_the_upgrade_still_work(
    action: dict[str, Any], verb: Verb, inputs: dict[str, Any]
) -> None:
    interaction = parse_block_action(_with_action(**action)).interaction
    assert (interaction.request_id, interaction.verb, interaction.inputs) == (
        REQUEST_ID, verb, inputs,
    )  # fmt: skip


def _with_action(**action: Any) -> dict[str, Any]:
    body = click_body(_blocks("requestApproval"), "hitl_approve")
    body["actions"] = [{**body["actions"][0], **action}]
    return body


@pytest.mark.parametrize(
    "body",
    [
        _with_action(action_id="someone_elses_button"),
        _with_action(action_id="hitl_frobnicate"),
        _with_action(action_id="hitl_choose_x"),
        _with_action(value=""),
        _with_action(type="static_select", action_id="hitl_choose", block_id="other"),
        _with_action(type="static_select", action_id="hitl_choose", selected_option=None),
        {**_with_action(), "user": {}},
        {**_with_action(), "actions": []},
        {"type": "block_actions"},
    ],
)
def test_foreign_or_broken_clicks_are_refused(body: dict[str, Any]) -> None:
    with pytest.raises(PayloadError):
        parse_block_action(body)


# -- modal submissions -------------------------------------------------------------------------

EVERY_VALUE = {
    "name": "Ada & <b>",
    "notes": None,  # optional, left empty
    "height": "1.75",
    "age": "36",
    "email": "ada@example.com",
    "site": "https://ada.example",
    "day": "2026-01-02",
    "at": "09:30",
    "when": 1767346200,
    "agree": "true",
    "size": "1",
    "tags": ["0", "2"],
    "owner": "U0OWNER01",
    "file": [slack_file()],
}


def test_every_field_kind_is_read_back_as_the_core_reads_it() -> None:
    view = render_modal(EVERY_FORM, Verb.SUBMIT, REQUEST_ID)
    submission = parse_view_submission(submission_body(view, EVERY_VALUE))
    interaction = submission.interaction
    assert (interaction.request_id, interaction.user_id) == (REQUEST_ID, ACTOR)
    assert (interaction.verb, interaction.submitted) == (Verb.SUBMIT, True)
    assert submission.fields == tuple(f.name for f in EVERY_FORM.fields)
    file = {
        "name": "invoice.pdf",
        "size": 12345,
        "url": "https://files.slack.com/files-pri/T0123-F0123/invoice.pdf",
        "mimetype": "application/pdf",
    }
    assert interaction.inputs == {**EVERY_VALUE, "agree": True, "file": file}
    read = read_form(EVERY_FORM, interaction.inputs)
    assert read.errors == {}
    assert read.values == {
        "name": "Ada & <b>", "height": 1.75, "age": 36, "email": "ada@example.com",
        "site": "https://ada.example", "day": "2026-01-02", "at": "09:30",
        "when": "2026-01-02T09:30+00:00", "agree": True, "size": "M", "tags": ["red", "blue"],
        "owner": "U0OWNER01", "file": file,
    }  # fmt: skip


def test_an_empty_form_is_read_as_left_empty() -> None:
    view = render_modal(EVERY_FORM, Verb.SUBMIT, REQUEST_ID)
    inputs = parse_view_submission(submission_body(view, {})).interaction.inputs
    assert read_form(EVERY_FORM, inputs).errors == {
        f.name: "Required" for f in EVERY_FORM.fields if f.required
    }


def test_a_no_is_an_answer() -> None:
    view = render_modal(EVERY_FORM, Verb.SUBMIT, REQUEST_ID)
    inputs = parse_view_submission(submission_body(view, {"agree": "false"})).interaction.inputs
    assert inputs["agree"] is False


def test_the_decline_reason_is_read_back() -> None:
    view = render_modal(DECLINE_FORM, Verb.DECLINE, REQUEST_ID)
    submission = parse_view_submission(submission_body(view, {"reason": "Not on a Friday"}))
    assert submission.interaction.verb is Verb.DECLINE
    assert submission.interaction.inputs == {"reason": "Not on a Friday"}
    assert submission.view_id == "V0123"


def test_a_modal_of_before_the_upgrade_still_works() -> None:
    view = render_modal(DECLINE_FORM, Verb.DECLINE, REQUEST_ID)
    body = submission_body(view, {"reason": "no"})
    body["view"]["callback_id"] = "hitl_modal:reject_reason"
    assert parse_view_submission(body).interaction.verb is Verb.DECLINE


def _submission(**view: Any) -> dict[str, Any]:
    body = submission_body(render_modal(DECLINE_FORM, Verb.DECLINE, REQUEST_ID), {"reason": "x"})
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
    submission = parse_view_submission(_submission(state={}))
    assert submission.interaction.inputs == {}
    assert submission.fields == ("reason",)  # from the view's blocks


def test_a_stop_click_names_the_turns_room_and_who_clicked() -> None:
    button = stop_chunk("slack:C0123CHAN:1700000000.000100")["blocks"][0]["elements"][0]
    body = {
        "type": "block_actions", "user": {"id": ACTOR},
        "actions": [{"action_id": button["action_id"], "value": button["value"]}],
        "container": {"channel_id": CHANNEL, "message_ts": MESSAGE_TS, "thread_ts": THREAD_TS},
    }  # fmt: skip
    click = parse_stop_click(body)
    assert (click.user_id, click.room_id) == (ACTOR, "slack:C0123CHAN:1700000000.000100")
    assert (click.channel_id, click.thread_ts) == (CHANNEL, THREAD_TS)
    with pytest.raises(PayloadError):  # a request's Stop (Verb.STOP) is not a turn's
        parse_stop_click({**body, "actions": [{"action_id": "hitl_stop", "value": "r1"}]})


def test_stream_text_is_cut_to_what_one_call_takes_never_inside_an_entity() -> None:
    text = "a" * (STREAM_TEXT - 2) + "&amp;" + "b" * 10
    pieces = text_pieces(text)
    assert "".join(pieces) == text and all(len(p) <= STREAM_TEXT for p in pieces)
    assert pieces[1].startswith("&amp;")
    assert text_pieces("") == []
