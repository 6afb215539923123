"""Block Kit rendering: every tool in every state, adversarial inputs, the modals."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from adapters.slack.render import (
    SlackMessage,
    accepted_types,
    render_message,
    render_modal,
    slack_date,
)
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools import BUILTIN_TOOLS, HumanTool
from tests.adapters.slack.blockkit_rules import (
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

REQUEST_ID = "0123456789abcdef01234567"
ACTOR = "U123ACTOR"
ANSWERER = "U777ANSWER"
CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
# Everything a model could slip in to ping, mention or hide a link; plus the `<x&y>` marker.
MARK = "<x&y> <!channel> <!here|here> @here @channel <@U999> <https://evil.example|click>"
FORBIDDEN = ["<x&y>", "<!channel>", "<!here", "<@U999>", "<https://evil"]
BROADCAST = re.compile(r"@(here|channel|everyone)\b", re.IGNORECASE)


def make_update(
    tool_name: str,
    arguments: dict[str, Any],
    state: RenderState = RenderState.EXECUTING,
    **changes: Any,
) -> RequestUpdate:
    fields: dict[str, Any] = {
        "state": state,
        "pending_id": REQUEST_ID,
        "tool_name": tool_name,
        "arguments": arguments,
        "room_id": "C1:1700000000.000100",
        "tool_call_id": "toolu_1",
        "channel_id": "slack",
        "channel_type": "ai",
        "actor_id": ACTOR,
        "created_at": CREATED,
        "expires_at": CREATED + timedelta(minutes=5),
    }
    if state is RenderState.COMPLETE:
        fields.update(settled_by=ANSWERER, settled_at=CREATED + timedelta(minutes=1))
    if state is RenderState.REJECTED:
        fields.update(settled_by=ANSWERER, settled_at=CREATED + timedelta(minutes=1))
        fields.update(reason="Not now " + MARK)
    fields.update(changes)
    return RequestUpdate(**fields)


class TicketAnswer(BaseModel):
    status: str
    priority: int


CUSTOM_TOOL = HumanTool(
    "lookupTicket", "Ask for a ticket's status " + MARK, BaseModel, TicketAnswer
)

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
    (
        "ask-huge",
        "AskUserQuestion",
        {"question": MARK * 150},
        json.dumps({"answer": MARK * 80}),
        None,
    ),
    ("ask-emoji", "AskUserQuestion", {"question": "😀" * 5000}, '{"answer":"😀"}', None),
    ("ask-empty", "AskUserQuestion", {"question": ""}, '{"answer":" "}', None),
    (
        "approval",
        "requestApproval",
        {"action": "Deploy " + MARK, "reason": "Release " + MARK},
        json.dumps({"approved": False, "reason": MARK}),
        None,
    ),
    (
        "approval-huge",
        "requestApproval",
        {"action": MARK * 100, "reason": "&" * 4000},
        '{"approved":true}',
        None,
    ),
    (
        "select-3",
        "selectOption",
        {"question": "Pick " + MARK, "options": ["a " + MARK, "b", "c"]},
        json.dumps({"selectedIndex": 0, "selectedValue": "a " + MARK}),
        None,
    ),
    (
        "select-500-char",
        "selectOption",
        {"question": "Pick", "options": [MARK * 7, "x" * 500, "y"]},
        json.dumps({"selectedIndex": 1, "selectedValue": "x" * 500}),
        None,
    ),
    (
        "select-6",
        "selectOption",
        {"question": "Pick", "options": [f"option {i}" for i in range(6)]},
        '{"selectedIndex":5,"selectedValue":"option 5"}',
        None,
    ),
    (
        "select-200",
        "selectOption",
        {"question": MARK * 100, "options": [f"{MARK} {i}" * 6 for i in range(200)]},
        json.dumps({"selectedIndex": 150, "selectedValue": MARK}),
        None,
    ),
    (
        "form",
        "collectUserData",
        {"fields": FIELDS},
        json.dumps({"age": 42, "email": "a@b.co", "city": MARK}),
        None,
    ),
    (
        "form-30",
        "collectUserData",
        {"fields": _many_fields(30)},
        json.dumps({f"f{i}": MARK for i in range(30)}),
        None,
    ),
    (
        "form-150",
        "collectUserData",
        {"fields": _many_fields(150)},
        json.dumps({f"f{i}": MARK * 20 for i in range(150)}),
        None,
    ),
    (
        "form-odd-fields",
        "collectUserData",
        {"fields": ["x", {"name": "1bad"}, {"name": "ok", "label": ""}, {"name": "ok"}, 7]},
        '{"ok":"fine"}',
        None,
    ),
    (
        "upload",
        "uploadFile",
        {"purpose": "Invoice " + MARK, "acceptedTypes": [".PDF", "image/png", MARK]},
        json.dumps(
            {
                "fileName": MARK + ".pdf",
                "fileSize": 12345,
                "url": "https://files.slack.com/files-pri/T1-F1/x.pdf?a=1&b=2",
            }
        ),
        None,
    ),
    (
        "upload-evil-url",
        "uploadFile",
        {"purpose": "x", "acceptedTypes": []},
        json.dumps({"fileName": "a.pdf", "fileSize": 1, "url": "https://x|<!channel>"}),
        None,
    ),
    (
        "confirm-danger",
        "confirmAction",
        {"title": "T" * 300 + MARK, "message": MARK * 200, "severity": "danger"},
        '{"confirmed":true}',
        None,
    ),
    (
        "confirm-warning",
        "confirmAction",
        {"title": "Heads up " + MARK, "message": "Sure? " + MARK, "severity": "warning"},
        '{"confirmed":false}',
        None,
    ),
    (
        "confirm-info",
        "confirmAction",
        {"title": "Proceed", "message": "Go on?"},
        '{"confirmed":true}',
        None,
    ),
    (
        "custom",
        "lookupTicket",
        {"ticket": MARK, "n": 5, "nested": {"a": [1, 2]}, MARK: "key injection"},
        json.dumps({"status": MARK, "priority": 2}),
        CUSTOM_TOOL,
    ),
    ("custom-no-tool", "whatever" + MARK, {"x": "y"}, "free text " + MARK, None),
    (
        "custom-many-args",
        "x" * 300,
        {f"arg{i}" + MARK: MARK * 100 for i in range(500)},
        json.dumps({f"k{i}": MARK * 100 for i in range(100)}),
        None,
    ),
    ("custom-empty", "emptyTool", {}, "", None),
    *[(f"{name}-no-args", name, {}, "not json", None) for name in BUILTIN_TOOLS],
]
CASE_IDS = [case[0] for case in CASES]
NOTHING_TO_CHOOSE = {"selectOption-no-args"}  # no options: no control could answer it
MODAL_KINDS = ["reject_reason", "answer", "form", "upload"]


def _render(
    case: tuple[str, str, dict[str, Any], str, HumanTool | None], state: RenderState
) -> SlackMessage:
    _, name, arguments, result, tool = case
    update = make_update(name, arguments, state, result=result)
    return render_message(update, tool or BUILTIN_TOOLS.get(name))


def _assert_inert(payload: Any) -> None:
    """No model-written text reaches Slack unescaped, in any string of the payload."""
    for text in strings(payload):
        for bad in FORBIDDEN:
            assert bad not in text, f"{bad!r} unescaped in {text[:200]!r}"
        assert not BROADCAST.search(text), f"bare broadcast in {text[:200]!r}"


# -- every tool, every state -------------------------------------------------------------------


@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_message_is_valid_and_inert(case: Any, state: RenderState) -> None:
    message = _render(case, state)
    assert_valid_message(message.text, message.blocks)
    _assert_inert([message.text, message.blocks])


@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_only_executing_is_interactive(case: Any, state: RenderState) -> None:
    elements = interactive_elements(_render(case, state).blocks)
    if state is RenderState.EXECUTING and case[0] not in NOTHING_TO_CHOOSE:
        assert elements
    else:
        assert elements == []


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_executing_addresses_the_actor(case: Any) -> None:
    message = _render(case, RenderState.EXECUTING)
    assert f"<@{ACTOR}>" in message.text
    assert any(f"<@{ACTOR}>" in text for text in strings(message.blocks))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_buttons_carry_only_the_request_id(case: Any) -> None:
    blocks = _render(case, RenderState.EXECUTING).blocks
    buttons = [n for n in walk(blocks) if isinstance(n, dict) and n.get("type") == "button"]
    selects = [n for n in walk(blocks) if isinstance(n, dict) and n.get("type") == "static_select"]
    assert buttons or selects or case[0] in NOTHING_TO_CHOOSE
    assert all(button["value"] == REQUEST_ID for button in buttons)
    action_ids = [e["action_id"] for e in interactive_elements(blocks)]
    assert all(re.fullmatch(r"hitl_[a-z_]+(_[0-9]+)?", a) for a in action_ids)


@pytest.mark.parametrize("kind", MODAL_KINDS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_modal_is_valid_and_inert(case: Any, kind: str) -> None:
    _, name, arguments, _, tool = case
    update = make_update(name, arguments)
    view = render_modal(kind, update, tool or BUILTIN_TOOLS.get(name), errors_hint=MARK * 50)
    assert_valid_modal(view)
    _assert_inert(view)
    assert view["callback_id"] == f"hitl_modal:{kind}"
    assert view["private_metadata"] == REQUEST_ID


# -- the conformance schemas (skipped without ../shared) ---------------------------------------

MESSAGE_SCHEMA = "blockkit-message.schema.json"
MODAL_SCHEMA = "blockkit-modal.schema.json"


@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_messages_match_the_block_kit_schema(case: Any, state: RenderState) -> None:
    if not schema_available(MESSAGE_SCHEMA):
        pytest.skip("HITL_CONFORMANCE_DIR not set or schema missing")
    message = _render(case, state)
    payload = {"channel": "C1", "text": message.text, "blocks": message.blocks}
    assert schema_problems(payload, MESSAGE_SCHEMA) == []


@pytest.mark.parametrize("kind", MODAL_KINDS)
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_modals_match_the_block_kit_schema(case: Any, kind: str) -> None:
    if not schema_available(MODAL_SCHEMA):
        pytest.skip("HITL_CONFORMANCE_DIR not set or schema missing")
    _, name, arguments, _, tool = case
    view = render_modal(kind, make_update(name, arguments), tool, errors_hint="Try again")
    assert schema_problems(view, MODAL_SCHEMA) == []


# -- per tool ------------------------------------------------------------------------------------


def _elements(message: SlackMessage) -> list[dict[str, Any]]:
    return interactive_elements(message.blocks)


def _text_of(message: SlackMessage) -> str:
    return "\n".join(strings(message.blocks))


def test_approval_has_approve_and_reject() -> None:
    args = {"action": "Deploy", "reason": "Release"}
    elements = _elements(render_message(make_update("requestApproval", args)))
    assert [(e["action_id"], e.get("style")) for e in elements] == [
        ("hitl_approve", "primary"),
        ("hitl_reject", "danger"),
    ]


def test_select_up_to_five_options_are_buttons() -> None:
    args = {"question": "Pick", "options": ["a", "b", "c", "d", "e"]}
    elements = _elements(render_message(make_update("selectOption", args)))
    assert [e["action_id"] for e in elements] == [f"hitl_option_{i}" for i in range(5)]
    assert [e["text"]["text"] for e in elements] == ["a", "b", "c", "d", "e"]


def test_select_over_five_options_is_a_static_select() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(6)]}
    message = render_message(make_update("selectOption", args))
    (select,) = _elements(message)
    assert select["type"] == "static_select"
    assert select["action_id"] == "hitl_select"
    assert [o["value"] for o in select["options"]] == [str(i) for i in range(6)]
    block = next(b for b in message.blocks if b["type"] == "actions")
    assert block["block_id"] == f"hitl_actions:{REQUEST_ID}"


def test_select_shows_at_most_a_hundred_options_and_says_so() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(200)]}
    message = render_message(make_update("selectOption", args))
    (select,) = _elements(message)
    assert len(select["options"]) == 100
    assert "first 100 of 200" in _text_of(message)


def test_select_lists_options_in_full_when_buttons_cut_them() -> None:
    long = "word " * 40
    args = {"question": "Pick", "options": [long, "b"]}
    message = render_message(make_update("selectOption", args))
    assert _elements(message)[0]["text"]["text"].endswith("…")
    assert long.strip() in _text_of(message)


def test_confirm_danger_has_red_button_and_dialog() -> None:
    args = {"title": "Drop table", "message": "Drop it?", "severity": "danger"}
    confirm, cancel = _elements(render_message(make_update("confirmAction", args)))
    assert confirm["action_id"] == "hitl_confirm"
    assert confirm["style"] == "danger"
    dialog = confirm["confirm"]
    assert dialog["style"] == "danger"
    assert {"title", "text", "confirm", "deny"} <= set(dialog)
    assert dialog["text"]["text"] == "Drop it?"
    assert cancel["action_id"] == "hitl_cancel"
    assert "confirm" not in cancel


def test_confirm_warning_shows_a_warning_emoji() -> None:
    args = {"title": "Careful", "message": "Sure?", "severity": "warning"}
    message = render_message(make_update("confirmAction", args))
    assert ":warning: Sure?" in _text_of(message)
    assert all("confirm" not in e for e in _elements(message))


def test_confirm_info_is_a_plain_primary_button() -> None:
    args = {"title": "Go", "message": "Go on?", "severity": "info"}
    confirm, _ = _elements(render_message(make_update("confirmAction", args)))
    assert confirm["style"] == "primary"
    assert "confirm" not in confirm


def test_confirm_title_is_the_header_cut_to_150() -> None:
    args = {"title": "T" * 300, "message": "m", "severity": "info"}
    header = render_message(make_update("confirmAction", args)).blocks[0]
    assert header["type"] == "header"
    assert header["text"]["text"] == "T" * 149 + "…"


def test_question_hints_at_a_thread_reply_and_offers_answer() -> None:
    message = render_message(make_update("AskUserQuestion", {"question": "Which?"}))
    assert "Reply in this thread" in _text_of(message)
    assert [e["action_id"] for e in _elements(message)] == ["hitl_answer"]


def test_form_and_upload_open_modals() -> None:
    form = render_message(make_update("collectUserData", {"fields": FIELDS}))
    upload = render_message(make_update("uploadFile", {"purpose": "p", "acceptedTypes": []}))
    assert [e["action_id"] for e in _elements(form)] == ["hitl_open_form"]
    assert [e["action_id"] for e in _elements(upload)] == ["hitl_upload"]


def test_custom_tool_shows_arguments_and_an_answer_button() -> None:
    update = make_update("lookupTicket", {"ticket": "T-1", "n": 5})
    message = render_message(update, CUSTOM_TOOL)
    text = _text_of(message)
    assert "*ticket*\nT-1" in text
    assert "*n*\n5" in text
    assert "Ask for a ticket's status" in text
    assert [e["action_id"] for e in _elements(message)] == ["hitl_answer"]


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
    message = render_message(update)
    assert "Preparing request…" in _text_of(message)
    assert "SECRET-PARTIAL" not in _text_of(message) + message.text


def test_no_actor_means_anyone() -> None:
    update = make_update("AskUserQuestion", {"question": "Q"}, actor_id=None)
    message = render_message(update)
    assert "Anyone here can answer." in _text_of(message)
    assert "<@" not in message.text


def test_executing_shows_the_deadline() -> None:
    message = render_message(make_update("AskUserQuestion", {"question": "Q"}))
    assert slack_date(CREATED + timedelta(minutes=5)) in _text_of(message)


@pytest.mark.parametrize(
    ("name", "arguments", "result", "shown"),
    [
        ("AskUserQuestion", {"question": "Q"}, '{"answer":"eu-west"}', "eu-west"),
        ("requestApproval", {"action": "a", "reason": "r"}, '{"approved":true}', "*Approved*"),
        (
            "requestApproval",
            {"action": "a", "reason": "r"},
            '{"approved":false,"reason":"too risky"}',
            "too risky",
        ),
        (
            "selectOption",
            {"question": "Q", "options": ["x", "y"]},
            '{"selectedIndex":1,"selectedValue":"y"}',
            "*Selected*\ny",
        ),
        ("collectUserData", {"fields": FIELDS}, '{"age":42,"email":"a@b.co","city":"Oslo"}', "42"),
        (
            "uploadFile",
            {"purpose": "p"},
            '{"fileName":"a.pdf","fileSize":2048,"url":"https://files.slack.com/f?a=1&b=2"}',
            "<https://files.slack.com/f?a=1&amp;b=2|a.pdf> (2,048 bytes)",
        ),
        ("confirmAction", {"title": "t", "message": "m"}, '{"confirmed":false}', "*Cancelled*"),
        ("custom", {"q": 1}, "plain words", "plain words"),
    ],
)
def test_complete_says_who_when_and_what(
    name: str, arguments: dict[str, Any], result: str, shown: str
) -> None:
    update = make_update(name, arguments, RenderState.COMPLETE, result=result)
    text = _text_of(render_message(update))
    assert f"Answered by <@{ANSWERER}>" in text
    assert slack_date(CREATED + timedelta(minutes=1)) in text
    assert shown in text


def test_complete_form_uses_field_labels() -> None:
    result = '{"age":42,"email":"a@b.co","city":"Oslo"}'
    update = make_update(
        "collectUserData", {"fields": FIELDS[:1]}, RenderState.COMPLETE, result=result
    )
    assert "*Age*\n42" in _text_of(render_message(update))


def test_settled_by_from_another_surface_is_not_a_mention() -> None:
    update = make_update(
        "AskUserQuestion", {"question": "Q"}, RenderState.COMPLETE, result='{"answer":"a"}',
        settled_by="29:teams<user>",
    )  # fmt: skip
    text = _text_of(render_message(update))
    assert "by 29:teams&lt;user&gt;" in text


def test_rejected_says_by_whom_and_why() -> None:
    update = make_update("requestApproval", {"action": "a", "reason": "r"}, RenderState.REJECTED)
    message = render_message(update)
    text = _text_of(message)
    assert f"*Rejected* by <@{ANSWERER}>" in text
    assert "Not now &lt;x&amp;y&gt;" in text
    assert message.text.startswith(f"<@{ACTOR}> Rejected — Approval needed: a")


def test_expired_shows_the_deadline() -> None:
    update = make_update("AskUserQuestion", {"question": "Q"}, RenderState.EXPIRED)
    text = _text_of(render_message(update))
    assert "Expired " + slack_date(CREATED + timedelta(minutes=5)) in text


def test_cancelled_says_withdrawn() -> None:
    update = make_update("AskUserQuestion", {"question": "Q"}, RenderState.CANCELLED)
    assert "Withdrawn" in _text_of(render_message(update))


def test_slack_date_format() -> None:
    when = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    expected = (
        f"<!date^{int(when.timestamp())}^{{date_short_pretty}} {{time}}|2026-01-02 03:04 UTC>"
    )
    assert slack_date(when) == expected
    assert slack_date(when.replace(tzinfo=None)) == expected  # naive is taken as UTC


def test_unusable_request_id_is_refused() -> None:
    with pytest.raises(ValueError, match="request id"):
        render_message(make_update("AskUserQuestion", {"question": "Q"}, pending_id=""))
    with pytest.raises(ValueError, match="request id"):
        render_modal(
            "answer", make_update("AskUserQuestion", {"question": "Q"}, pending_id="x" * 3001)
        )


# -- modals ----------------------------------------------------------------------------------------


def test_form_modal_has_one_typed_input_per_field() -> None:
    view = render_modal("form", make_update("collectUserData", {"fields": FIELDS}))
    inputs = [b for b in view["blocks"] if b["type"] == "input"]
    assert [b["block_id"] for b in inputs] == ["age", "email", "city"]
    assert [b["element"]["type"] for b in inputs] == [
        "number_input",
        "email_text_input",
        "plain_text_input",
    ]
    assert inputs[0]["element"]["is_decimal_allowed"] is True
    assert [b["element"]["action_id"] for b in inputs] == ["age", "email", "city"]
    assert view["submit"]["text"] and view["close"]["text"]


def test_form_modal_keeps_to_a_hundred_blocks() -> None:
    view = render_modal("form", make_update("collectUserData", {"fields": _many_fields(150)}))
    assert len(view["blocks"]) <= 100
    with_hint = render_modal(
        "form", make_update("collectUserData", {"fields": _many_fields(150)}), errors_hint="x"
    )
    assert with_hint["blocks"][0]["type"] == "context"
    assert len(with_hint["blocks"]) == 100


def test_form_without_usable_fields_has_no_submit() -> None:
    view = render_modal("form", make_update("collectUserData", {"fields": []}))
    assert "submit" not in view
    assert_valid_modal(view)


def test_reject_modal_reason_is_optional_multiline() -> None:
    view = render_modal("reject_reason", make_update("requestApproval", {"action": "a"}))
    (reason,) = [b for b in view["blocks"] if b["type"] == "input"]
    assert reason["block_id"] == "reason"
    assert reason["optional"] is True
    assert reason["element"]["multiline"] is True


def test_answer_modal_for_a_question_and_for_a_multi_field_custom_tool() -> None:
    ask = render_modal("answer", make_update("AskUserQuestion", {"question": "Which?"}))
    assert ask["title"]["text"] == "Answer"
    assert "Which?" in "\n".join(strings(ask["blocks"]))
    custom = render_modal("answer", make_update("lookupTicket", {"t": 1}), CUSTOM_TOOL)
    (answer,) = [b for b in custom["blocks"] if b["type"] == "input"]
    assert "JSON" in answer["hint"]["text"]
    assert custom["title"]["text"] == "lookupTicket"


@pytest.mark.parametrize(
    ("accepted", "filetypes"),
    [
        ([".pdf", "PDF", "*.pdf", "application/pdf"], ["pdf"]),
        (["image/png", ".jpg"], ["png", "jpg"]),
        (["image/jpeg"], ["jpg", "jpeg"]),
        (["image/*"], ["png", "jpg", "jpeg", "gif", "webp", "svg", "heic"]),
        (["*"], None),
        ([], None),
        (["pdf", "application/x-unknown"], None),  # Slack's filter would refuse the unknown
    ],
)
def test_upload_modal_normalises_accepted_types(
    accepted: list[str], filetypes: list[str] | None
) -> None:
    update = make_update("uploadFile", {"purpose": "p", "acceptedTypes": accepted})
    view = render_modal("upload", update)
    (file,) = [b for b in view["blocks"] if b["type"] == "input"]
    assert file["block_id"] == "file"
    assert file["element"]["type"] == "file_input"
    assert file["element"]["max_files"] == 1
    assert file["element"].get("filetypes") == filetypes


def test_accepted_types_checks_extension_or_mimetype() -> None:
    types = accepted_types([".pdf", "application/x-custom", "image/*"])
    assert types.accepts("Report.PDF", None)
    assert types.accepts("blob.bin", "application/x-custom")
    assert types.accepts("photo", "image/heic")
    assert not types.accepts("notes.txt", "text/plain")
    assert accepted_types([]).accepts("anything.exe", None)


def test_unknown_modal_kind_is_refused() -> None:
    with pytest.raises(ValueError):
        render_modal("nope", make_update("AskUserQuestion", {"question": "Q"}))


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
    view = render_modal("answer", make_update("AskUserQuestion", {"question": "Q"}))
    del view["submit"]
    assert any("needs submit" in p for p in modal_problems(view))
    view["title"]["text"] = "t" * 25
    assert any("25 > 24" in p for p in modal_problems(view))


def test_schema_catches_a_bad_payload() -> None:
    if not schema_available(MESSAGE_SCHEMA):
        pytest.skip("HITL_CONFORMANCE_DIR not set or schema missing")
    header = {"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}
    assert schema_problems({"channel": "C1", "blocks": [header]}, MESSAGE_SCHEMA)
