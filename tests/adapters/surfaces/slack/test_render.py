"""Block Kit messages: every tool in every state, adversarial inputs, the controls."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from adapters.surfaces.slack.messages import SlackMessage, render_message
from adapters.surfaces.slack.modals import render_modal
from adapters.surfaces.slack.text import slack_date
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools.tool import BUILTIN_TOOLS, HumanTool
from bot.requests.view import build_view
from tests.adapters.surfaces.slack.blockkit_rules import (
    assert_valid_message,
    assert_valid_modal,
    interactive_elements,
    message_problems,
    modal_problems,
    schema_available,
    schema_problems,
    strings,
    walk,
)
from tests.adapters.surfaces.slack.updates import (
    ACTOR,
    ANSWERER,
    CREATED,
    CUSTOM_TOOL,
    EVERY_KIND_FIELDS,
    MARK,
    REQUEST_ID,
    assert_inert,
    make_update,
)

pytestmark = pytest.mark.fast  # pure functions: in `make check`

FIELDS = [
    {"name": "age", "label": "Age", "type": "number"},
    {"name": "email", "label": "Email", "type": "email"},
    {"name": "city", "label": "City " + MARK},
]


def _many_fields(n: int) -> list[dict[str, Any]]:
    kinds = ["text", "number", "email"]
    return [{"name": f"f{i}", "label": f"{MARK} {i}", "type": kinds[i % 3]} for i in range(n)]


# (case id, tool name, arguments, the stored answer when complete, the HumanTool if any)
CASES: list[tuple[str, str, dict[str, Any], str, HumanTool | None]] = [
    ("ask", "AskUserQuestion", {"question": "Which region? " + MARK}, '{"answer":"eu"}', None),
    ("ask-huge", "AskUserQuestion", {"question": MARK * 150},
     json.dumps({"answer": MARK * 80}), None),
    ("ask-emoji", "AskUserQuestion", {"question": "😀" * 5000}, '{"answer":"😀"}', None),
    ("ask-empty", "AskUserQuestion", {"question": ""}, '{"answer":" "}', None),
    ("approval", "requestApproval", {"action": "Deploy " + MARK, "reason": "Release " + MARK},
     json.dumps({"approved": False, "reason": MARK}), None),
    ("approval-huge", "requestApproval", {"action": MARK * 100, "reason": "&" * 4000},
     '{"approved":true}', None),
    ("select-3", "selectOption", {"question": "Pick " + MARK, "options": ["a " + MARK, "b", "c"]},
     json.dumps({"selectedIndex": 0, "selectedValue": "a " + MARK}), None),
    ("select-500-char", "selectOption", {"question": "Pick", "options": [MARK * 7, "x" * 500, "y"]},
     json.dumps({"selectedIndex": 1, "selectedValue": "x" * 500}), None),
    ("select-6", "selectOption", {"question": "Pick", "options": [f"option {i}" for i in range(6)]},
     '{"selectedIndex":5,"selectedValue":"option 5"}', None),
    ("select-200", "selectOption",
     {"question": MARK * 100, "options": [f"{MARK} {i}" * 6 for i in range(200)]},
     json.dumps({"selectedIndex": 150, "selectedValue": MARK}), None),
    ("form", "collectUserData", {"fields": FIELDS},
     json.dumps({"age": 42, "email": "a@b.co", "city": MARK}), None),
    ("form-every-kind", "collectUserData", {"fields": EVERY_KIND_FIELDS},
     json.dumps({"name": MARK, "agree": True, "tags": ["red"]}), None),
    ("form-30", "collectUserData", {"fields": _many_fields(30)},
     json.dumps({f"f{i}": MARK for i in range(30)}), None),
    ("form-150", "collectUserData", {"fields": _many_fields(150)},
     json.dumps({f"f{i}": MARK * 20 for i in range(150)}), None),
    ("form-odd-fields", "collectUserData",
     {"fields": ["x", {"name": "1bad"}, {"name": "ok", "label": ""}, {"name": "ok"}, 7]},
     '{"ok":"fine"}', None),
    ("upload", "uploadFile",
     {"purpose": "Invoice " + MARK, "acceptedTypes": [".PDF", "image/png", MARK]},
     json.dumps({"fileName": MARK + ".pdf", "fileSize": 12345,
                 "url": "https://files.slack.com/files-pri/T1-F1/x.pdf?a=1&b=2"}), None),
    ("upload-evil-url", "uploadFile", {"purpose": "x", "acceptedTypes": []},
     json.dumps({"fileName": "a.pdf", "fileSize": 1, "url": "https://x|<!channel>"}), None),
    ("confirm-danger", "confirmAction",
     {"title": "T" * 300 + MARK, "message": MARK * 200, "severity": "danger"},
     '{"confirmed":true}', None),
    ("confirm-warning", "confirmAction",
     {"title": "Heads up " + MARK, "message": "Sure? " + MARK, "severity": "warning"},
     '{"confirmed":false}', None),
    ("confirm-info", "confirmAction", {"title": "Proceed", "message": "Go on?"},
     '{"confirmed":true}', None),
    ("custom", "lookupTicket",
     {"ticket": MARK, "n": 5, "nested": {"a": [1, 2]}, MARK: "key injection"},
     json.dumps({"status": MARK, "priority": 2}), CUSTOM_TOOL),
    ("custom-no-tool", "whatever" + MARK, {"x": "y"}, "free text " + MARK, None),
    ("custom-many-args", "x" * 300, {f"arg{i}" + MARK: MARK * 100 for i in range(500)},
     json.dumps({f"k{i}": MARK * 100 for i in range(100)}), None),
    ("custom-empty", "emptyTool", {}, "", None),
    *[(f"{name}-no-args", name, {}, "not json", None) for name in BUILTIN_TOOLS],
]  # fmt: skip
CASE_IDS = [case[0] for case in CASES]
Case = tuple[str, str, dict[str, Any], str, HumanTool | None]


def _tool(case: Case) -> HumanTool | None:
    return case[4] or BUILTIN_TOOLS.get(case[1])


def drawn(update: RequestUpdate) -> SlackMessage:
    """The message as the surface draws it: with the tool the bridge serves (built-ins)."""
    return render_message(update, BUILTIN_TOOLS.get(update.tool_name))


def _render(case: Case, state: RenderState) -> SlackMessage:
    _, name, arguments, result, _ = case
    return render_message(make_update(name, arguments, state, result=result), _tool(case))


def _modals(case: Case) -> list[dict[str, Any]]:
    """Every modal a control of the request opens (its form), as `views.open` gets it."""
    _, name, arguments, _, _ = case
    view = build_view(make_update(name, arguments), _tool(case))
    return [
        render_modal(c.form, c.verb, REQUEST_ID, intro=view.facts)
        for c in view.controls
        if c.form is not None
    ]


# -- every tool, every state -------------------------------------------------------------------


@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_message_is_valid_and_inert(case: Case, state: RenderState) -> None:
    message = _render(case, state)
    assert_valid_message(message.text, message.blocks)
    assert_inert([message.text, message.blocks])


@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_only_executing_is_interactive(case: Case, state: RenderState) -> None:
    elements = interactive_elements(_render(case, state).blocks)
    if state is RenderState.EXECUTING:
        assert elements
    else:
        assert elements == []


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_request_can_be_declined(case: Case) -> None:
    elements = interactive_elements(_render(case, RenderState.EXECUTING).blocks)
    assert elements[-1]["action_id"] == "hitl_decline"
    assert elements[-1]["text"]["text"] == "Decline"


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_executing_addresses_the_actor(case: Case) -> None:
    message = _render(case, RenderState.EXECUTING)
    assert f"<@{ACTOR}>" in message.text
    assert any(f"<@{ACTOR}>" in text for text in strings(message.blocks))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_buttons_carry_only_the_request_id(case: Case) -> None:
    blocks = _render(case, RenderState.EXECUTING).blocks
    buttons = [n for n in walk(blocks) if isinstance(n, dict) and n.get("type") == "button"]
    assert all(button["value"] == REQUEST_ID for button in buttons)
    action_ids = [e["action_id"] for e in interactive_elements(blocks)]
    assert all(re.fullmatch(r"hitl_[a-z]+(_[0-9]+)?", a) for a in action_ids)
    (actions,) = [b for b in blocks if b["type"] == "actions"]
    assert actions["block_id"] == f"hitl_actions:{REQUEST_ID}"


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_modal_is_valid_and_inert(case: Case) -> None:
    for view in _modals(case):
        assert_valid_modal(view)
        assert_inert(view)
        assert view["callback_id"].startswith("hitl_modal:")
        assert view["private_metadata"] == REQUEST_ID


# -- the conformance schemas (skipped without HITL_CONFORMANCE_DIR) ----------------------------

MESSAGE_SCHEMA = "blockkit-message.schema.json"
MODAL_SCHEMA = "blockkit-modal.schema.json"


@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_messages_match_the_block_kit_schema(case: Case, state: RenderState) -> None:
    if not schema_available(MESSAGE_SCHEMA):
        pytest.skip("HITL_CONFORMANCE_DIR not set or schema missing")
    message = _render(case, state)
    payload = {"channel": "C1", "text": message.text, "blocks": message.blocks}
    assert schema_problems(payload, MESSAGE_SCHEMA) == []


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_modals_match_the_block_kit_schema(case: Case) -> None:
    if not schema_available(MODAL_SCHEMA):
        pytest.skip("HITL_CONFORMANCE_DIR not set or schema missing")
    for view in _modals(case):
        assert schema_problems(view, MODAL_SCHEMA) == []


# -- per tool ------------------------------------------------------------------------------------


def _elements(message: SlackMessage) -> list[dict[str, Any]]:
    return interactive_elements(message.blocks)


def _text_of(message: SlackMessage) -> str:
    return "\n".join(strings(message.blocks))


def _ids(message: SlackMessage) -> list[str]:
    return [e["action_id"] for e in _elements(message)]


@pytest.mark.parametrize(
    ("name", "arguments", "action_ids"),
    [
        ("AskUserQuestion", {"question": "Which?"}, ["hitl_answer", "hitl_decline"]),
        ("requestApproval", {"action": "a", "reason": "r"}, ["hitl_approve", "hitl_decline"]),
        ("selectOption", {"question": "q", "options": ["x", "y"]},
         ["hitl_choose_0", "hitl_choose_1", "hitl_decline"]),
        ("collectUserData", {"fields": FIELDS}, ["hitl_submit", "hitl_decline"]),
        ("uploadFile", {"purpose": "p"}, ["hitl_submit", "hitl_decline"]),
        ("confirmAction", {"title": "t", "message": "m"},
         ["hitl_confirm", "hitl_cancel", "hitl_decline"]),
    ],
)  # fmt: skip
def test_every_builtin_tool_has_its_controls_and_decline(
    name: str, arguments: dict[str, Any], action_ids: list[str]
) -> None:
    message = render_message(make_update(name, arguments), BUILTIN_TOOLS[name])
    assert _ids(message) == action_ids
    assert {e.get("style") for e in _elements(message)[-1:]} == {None}  # Decline: plain


def test_approval_is_primary() -> None:
    args = {"action": "Deploy", "reason": "Release"}
    approve, _ = _elements(drawn(make_update("requestApproval", args)))
    assert (approve["text"]["text"], approve["style"]) == ("Approve", "primary")


def test_select_up_to_five_options_are_numbered_buttons() -> None:
    args = {"question": "Pick", "options": ["a", "b", "c", "d", "e"]}
    *options, _ = _elements(drawn(make_update("selectOption", args)))
    assert [e["action_id"] for e in options] == [f"hitl_choose_{i}" for i in range(5)]
    assert [e["text"]["text"] for e in options] == ["1. a", "2. b", "3. c", "4. d", "5. e"]
    assert all("style" not in e for e in options)  # one primary at most: none of them


def test_select_over_five_options_is_a_static_select() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(6)]}
    message = drawn(make_update("selectOption", args))
    select, decline = _elements(message)
    assert (select["type"], select["action_id"]) == ("static_select", "hitl_choose")
    assert [o["value"] for o in select["options"]] == [str(i) for i in range(6)]
    assert [o["text"]["text"] for o in select["options"]][:2] == ["1. o0", "2. o1"]
    assert decline["action_id"] == "hitl_decline"
    block = next(b for b in message.blocks if b["type"] == "actions")
    assert block["block_id"] == f"hitl_actions:{REQUEST_ID}"


def test_select_shows_at_most_a_hundred_options_and_says_so() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(200)]}
    message = drawn(make_update("selectOption", args))
    select, _ = _elements(message)
    assert len(select["options"]) == 100
    assert "first 100 of 200" in _text_of(message)


@pytest.mark.parametrize("count", [3, 8])
def test_options_sharing_a_long_prefix_are_told_apart_by_number(count: int) -> None:
    prefix = "The deployment plan for the eu-west-1 cluster, keeping every replica up, " * 2
    options = [prefix + f"variant {i}" for i in range(count)]
    message = drawn(make_update("selectOption", {"question": "Which?", "options": options}))
    element = _elements(message)[0]
    shown = (
        [e["text"]["text"] for e in _elements(message)[:-1]]
        if element["type"] == "button"
        else [o["text"]["text"] for o in element["options"]]
    )
    assert all(len(text) <= 75 and text.endswith("…") for text in shown)
    assert len(set(shown)) == count  # distinguishable although cut
    assert [text.split(".")[0] for text in shown] == [str(i + 1) for i in range(count)]
    listed = _text_of(message)  # and listed in full, numbered the same way
    for i in range(count):
        assert f"{i + 1}. {prefix}variant {i}" in listed


def test_confirm_danger_has_red_button_and_dialog() -> None:
    args = {"title": "Drop table", "message": "Drop it?", "severity": "danger"}
    confirm, cancel, decline = _elements(drawn(make_update("confirmAction", args)))
    assert (confirm["action_id"], confirm["style"]) == ("hitl_confirm", "danger")
    dialog = confirm["confirm"]
    assert dialog["style"] == "danger"
    assert {"title", "text", "confirm", "deny"} <= set(dialog)
    assert dialog["title"]["text"] == "Drop table"
    assert "cannot be undone" in dialog["text"]["text"]
    assert cancel["action_id"] == "hitl_cancel" and "confirm" not in cancel
    assert decline["action_id"] == "hitl_decline"


def test_confirm_warning_shows_a_warning_in_the_header() -> None:
    args = {"title": "Careful", "message": "Sure?", "severity": "warning"}
    message = drawn(make_update("confirmAction", args))
    assert message.blocks[0]["text"]["text"] == ":warning: Careful"
    assert all("confirm" not in e for e in _elements(message))


def test_confirm_info_is_a_plain_primary_button() -> None:
    args = {"title": "Go", "message": "Go on?", "severity": "info"}
    confirm, *_ = _elements(drawn(make_update("confirmAction", args)))
    assert confirm["style"] == "primary"
    assert "confirm" not in confirm


def test_confirm_title_is_the_header_cut_to_150() -> None:
    args = {"title": "T" * 300, "message": "m", "severity": "info"}
    header = drawn(make_update("confirmAction", args)).blocks[0]
    assert header["type"] == "header"
    assert header["text"]["text"] == "T" * 149 + "…"


def test_question_hints_at_a_thread_reply() -> None:
    message = drawn(make_update("AskUserQuestion", {"question": "Which?"}))
    assert "You can also answer by replying here." in _text_of(message)


def test_custom_tool_shows_arguments_and_opens_its_answer_form() -> None:
    message = render_message(make_update("lookupTicket", {"ticket": "T-1", "n": 5}), CUSTOM_TOOL)
    text = _text_of(message)
    assert "*ticket*\nT-1" in text
    assert "*n*\n5" in text
    assert "Ask for a ticket's status" in text
    assert _ids(message) == ["hitl_submit", "hitl_decline"]  # status and priority: a form


def test_a_tool_without_a_model_is_answered_in_text() -> None:
    message = drawn(make_update("freeform", {"q": "?"}))
    assert _ids(message) == ["hitl_answer", "hitl_decline"]


def test_a_tools_own_slack_renderer_wins() -> None:
    def render(update: RequestUpdate) -> list[dict[str, Any]]:
        return [{"type": "section", "text": {"type": "mrkdwn", "text": f"mine: {update.state}"}}]

    tool = HumanTool("mine", "d", BaseModel, renderers={"slack": render})
    message = render_message(make_update("mine", {}), tool)
    assert message.blocks[0]["text"]["text"] == "mine: executing"
    assert f"<@{ACTOR}>" in message.text


# -- states ----------------------------------------------------------------------------------------


def test_in_progress_shows_no_arguments() -> None:
    update = make_update("AskUserQuestion", {"question": "SECRET-PARTIAL"}, RenderState.IN_PROGRESS)
    message = drawn(update)
    assert "Preparing request…" in _text_of(message)
    assert "Preparing request…" in message.text
    assert "SECRET-PARTIAL" not in _text_of(message) + message.text


def test_no_actor_means_anyone() -> None:
    message = drawn(make_update("AskUserQuestion", {"question": "Q"}, actor_id=None))
    assert "Anyone here can answer." in _text_of(message)
    assert "<@" not in message.text


def test_executing_shows_the_deadline() -> None:
    message = drawn(make_update("AskUserQuestion", {"question": "Q"}))
    assert slack_date(CREATED + timedelta(minutes=5)) in _text_of(message)


@pytest.mark.parametrize(
    ("name", "arguments", "result", "shown"),
    [
        ("AskUserQuestion", {"question": "Q"}, '{"answer":"eu-west"}', "*Answer*\neu-west"),
        ("requestApproval", {"action": "a", "reason": "r"}, '{"approved":true}',
         "*Decision*\nApproved"),
        ("requestApproval", {"action": "a", "reason": "r"},
         '{"approved":false,"reason":"too risky"}', "*Reason*\ntoo risky"),
        ("selectOption", {"question": "Q", "options": ["x", "y"]},
         '{"selectedIndex":1,"selectedValue":"y"}', "*Selected*\ny"),
        ("collectUserData", {"fields": FIELDS}, '{"age":42,"email":"a@b.co","city":"Oslo"}',
         "*Age*\n42"),
        ("uploadFile", {"purpose": "p"},
         '{"fileName":"a.pdf","fileSize":2048,"url":"https://files.slack.com/f?a=1&b=2"}',
         "*File*\na.pdf (2,048 bytes)"),
        ("confirmAction", {"title": "t", "message": "m"}, '{"confirmed":false}',
         "*Decision*\nCancelled"),
        ("custom", {"q": 1}, "plain words", "plain words"),
    ],
)  # fmt: skip
def test_complete_says_who_when_and_what(
    name: str, arguments: dict[str, Any], result: str, shown: str
) -> None:
    update = make_update(name, arguments, RenderState.COMPLETE, result=result)
    message = render_message(update, BUILTIN_TOOLS.get(name))
    text = _text_of(message)
    assert f"Answered by <@{ANSWERER}>" in text
    assert slack_date(CREATED + timedelta(minutes=1)) in text
    assert shown in text
    assert message.text.startswith(f"Answered by <@{ANSWERER}>")


def test_an_uploaded_files_link_is_escaped() -> None:
    result = '{"fileName":"a.pdf","fileSize":1,"url":"https://files.slack.com/f?a=1&b=2"}'
    update = make_update("uploadFile", {"purpose": "p"}, RenderState.COMPLETE, result=result)
    assert "https://files.slack.com/f?a=1&amp;b=2" in _text_of(drawn(update))


def test_settled_by_from_another_surface_is_not_a_mention() -> None:
    update = make_update(
        "AskUserQuestion", {"question": "Q"}, RenderState.COMPLETE, result='{"answer":"a"}',
        settled_by="29:teams<user>",
    )  # fmt: skip
    assert "by 29:teams&lt;user&gt;" in _text_of(drawn(update))


def test_rejected_says_by_whom_and_why() -> None:
    update = make_update("requestApproval", {"action": "a", "reason": "r"}, RenderState.REJECTED)
    message = drawn(update)
    text = _text_of(message)
    assert f"Declined by <@{ANSWERER}>" in text
    assert "*Reason*\nNot now &lt;x&amp;y&gt;" in text
    assert message.text.startswith(f"Declined by <@{ANSWERER}>")
    assert message.text.endswith("— Approval needed: a")


def test_expired_shows_the_deadline() -> None:
    update = make_update("AskUserQuestion", {"question": "Q"}, RenderState.EXPIRED)
    text = _text_of(drawn(update))
    assert "Expired " + slack_date(CREATED + timedelta(minutes=5)) in text


def test_cancelled_says_withdrawn() -> None:
    update = make_update("AskUserQuestion", {"question": "Q"}, RenderState.CANCELLED)
    assert "Withdrawn" in _text_of(drawn(update))


def test_unusable_request_id_is_refused() -> None:
    with pytest.raises(ValueError, match="request id"):
        drawn(make_update("AskUserQuestion", {"question": "Q"}, pending_id=""))


def test_many_facts_keep_to_fifty_blocks_and_say_what_is_left_out() -> None:
    args = {f"arg{i}": "x" * 400 for i in range(80)}  # each long: a section of its own
    message = drawn(make_update("freeform", args))
    assert len(message.blocks) <= 50
    assert re.search(r"…and [0-9]+ more", _text_of(message))
    assert _ids(message) == ["hitl_answer", "hitl_decline"]


# -- the checker itself: it must see what it is there to see ---------------------------------


def _button_block(*buttons: dict[str, Any]) -> dict[str, Any]:
    return {"type": "actions", "elements": list(buttons)}


def _btn(action_id: str, text: str = "Go", value: str = "v") -> dict[str, Any]:
    return {
        "type": "button",
        "text": {"type": "plain_text", "text": text},
        "action_id": action_id,
        "value": value,
    }


def _select(options: list[dict[str, Any]]) -> dict[str, Any]:
    return _button_block({"type": "static_select", "action_id": "s", "options": options})


def _option(value: str) -> dict[str, Any]:
    return {"text": {"type": "plain_text", "text": "o"}, "value": value}


_SECTION = {"type": "section", "text": {"type": "mrkdwn", "text": "x"}}
_INPUT = {
    "type": "input",
    "label": {"type": "plain_text", "text": "l"},
    "element": {"type": "plain_text_input", "action_id": "v"},
}
_BAD_CONFIRM = {**_btn("a"), "confirm": {"text": {"type": "plain_text", "text": "t"}}}


@pytest.mark.parametrize(
    ("blocks", "problem"),
    [
        ([_button_block(_btn("a"), _btn("a"))], "duplicate action_id"),
        ([_button_block(_btn("a")), _button_block(_btn("a"))], "duplicate action_id"),
        (
            [{**_button_block(_btn("a")), "block_id": "b"}, {**_SECTION, "block_id": "b"}],
            "duplicate block_id",
        ),
        ([_button_block(_btn("a", text="x" * 76))], "text of 76 > 75"),
        ([_button_block(_btn("a", value="v" * 2001))], "2001 > 2000"),
        ([_button_block(_btn("a" * 256))], "256 > 255"),
        ([{"type": "section", "text": {"type": "mrkdwn", "text": "😀" * 1501}}], "3002 > 3000"),
        ([{"type": "section", "text": {"type": "mrkdwn", "text": "  "}}], "empty text"),
        ([{"type": "header", "text": {"type": "mrkdwn", "text": "h"}}], "text type"),
        ([_SECTION] * 51, "51 blocks > 50"),
        ([{"type": "section", "fields": [_SECTION["text"]] * 11}], "11 fields > 10"),
        ([_select([_option(str(i)) for i in range(101)])], "1 to 100"),
        ([_select([_option("v" * 151)])], "151 > 150"),
        ([_select([_option("1"), _option("1")])], "duplicate option values"),
        ([_button_block(_BAD_CONFIRM)], "confirm.title"),
        ([_button_block({**_btn("a"), "style": "loud"})], "style"),
        ([_INPUT], "input block in a message"),
    ],
)
def test_checker_catches(blocks: list[dict[str, Any]], problem: str) -> None:
    problems = message_problems("fallback", blocks)
    assert any(problem in p for p in problems), problems


def test_checker_wants_submit_with_inputs() -> None:
    (view,) = _modals(("ask", "AskUserQuestion", {"question": "Q"}, "", None))[:1]
    del view["submit"]
    assert any("needs submit" in p for p in modal_problems(view))
    view["title"]["text"] = "t" * 25
    assert any("25 > 24" in p for p in modal_problems(view))


def test_schema_catches_a_bad_payload() -> None:
    if not schema_available(MESSAGE_SCHEMA):
        pytest.skip("HITL_CONFORMANCE_DIR not set or schema missing")
    header = {"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}
    assert schema_problems({"channel": "C1", "blocks": [header]}, MESSAGE_SCHEMA)
