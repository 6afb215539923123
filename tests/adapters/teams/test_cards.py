"""Adaptive Cards: every tool in every state, live and read-only, adversarial inputs, the schema."""

from __future__ import annotations

import json
import os
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from adapters.teams.cards import (
    byte_length,
    cut,
    plain_text,
    render_card,
    teams_date,
    teams_text,
)
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools import BUILTIN_TOOLS, EMAIL, HumanTool
from tests.adapters.teams.card_rules import (
    SCHEMA,
    assert_valid_card,
    card_problems,
    card_size,
    elements,
    executes,
    inputs,
    interactive_elements,
    markdown_strings,
    plain_strings,
    schema_problems,
    walk,
)

REQUEST_ID = "0123456789abcdef01234567"
ACTOR = "29:1actor-aad"
ANSWERER = "29:1answerer-aad"
CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
REFRESH = [ACTOR, "29:1approver"]
# Everything a model could slip in to ping, hide a link, fake markup or one of our dates.
MARK = (
    "[click](https://evil.example) <at>Everyone</at> **bold** _it_ <b>x</b> &lt;at&gt; "
    "{{DATE(1999-01-01T00:00:00Z, SHORT)}} ![img](https://evil.example/i.png) \\*"
)
BUDGET = 24_000  # the adapter's promise: well under Teams's ~28 KB


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
        "room_id": "19:conversation;messageid=1",
        "tool_call_id": "toolu_1",
        "channel_id": "teams",
        "channel_type": "ai",
        "actor_id": ACTOR,
        "created_at": CREATED,
        "expires_at": CREATED + timedelta(minutes=5),
    }
    if state in (RenderState.COMPLETE, RenderState.REJECTED):
        fields.update(settled_by=ANSWERER, settled_at=CREATED + timedelta(minutes=1))
    if state is RenderState.REJECTED:
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
        "ask-10k",
        "AskUserQuestion",
        {"question": "q" * 10_000},
        json.dumps({"answer": "a" * 10_000}),
        None,
    ),
    (
        "ask-huge",
        "AskUserQuestion",
        {"question": MARK * 120},
        json.dumps({"answer": MARK * 80}),
        None,
    ),
    ("ask-emoji", "AskUserQuestion", {"question": "😀" * 10_000}, '{"answer":"😀"}', None),
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
        {"action": MARK * 100, "reason": "&" * 10_000},
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
        "select-6",
        "selectOption",
        {"question": "Pick", "options": [f"option {i}" for i in range(6)]},
        '{"selectedIndex":5,"selectedValue":"option 5"}',
        None,
    ),
    (
        "select-100",
        "selectOption",
        {"question": "q" * 10_000, "options": ["😀" * 500 for _ in range(100)]},
        json.dumps({"selectedIndex": 99, "selectedValue": "😀" * 500}),
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
        "form-reserved-names",
        "collectUserData",
        {"fields": [{"name": "reason", "label": "Reason"}, {"name": "request_id", "label": "Id"}]},
        '{"reason":"r","request_id":"x"}',
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
        "form-40",
        "collectUserData",
        {"fields": _many_fields(40)},
        json.dumps({f"f{i}": MARK * 20 for i in range(40)}),
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
            {"fileName": MARK + ".pdf", "fileSize": 0, "url": "https://x.sharepoint.com/a?b=1&c=2"}
        ),
        None,
    ),
    (
        "upload-evil-url",
        "uploadFile",
        {"purpose": "x", "acceptedTypes": []},
        json.dumps({"fileName": "a.pdf", "fileSize": 5, "url": "https://x/<at>Everyone</at>"}),
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
        {"title": "Go", "message": "Go on?"},
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
NOTHING_TO_SEND = {"selectOption-no-args", "collectUserData-no-args"}  # only Decline is left

# How each card is rendered: (variant id, live, refresh ids, error, values)
VARIANTS: list[tuple[str, bool, list[str], Any, dict[str, str] | None]] = [
    ("live", True, [], None, None),
    ("live-refresh", True, REFRESH, None, None),
    ("read-only-refresh", False, REFRESH, None, None),
    # The largest a live card gets: 60 long refresh ids, a long error, long values to put back.
    ("live-worst", True, [f"29:{i:090d}" for i in range(60)], MARK * 50, None),
]
VARIANT_IDS = [v[0] for v in VARIANTS]


def _render(
    case: tuple[str, str, dict[str, Any], str, HumanTool | None],
    state: RenderState,
    variant: tuple[str, bool, list[str], Any, dict[str, str] | None] = VARIANTS[0],
) -> dict[str, Any]:
    _, name, arguments, result, tool = case
    _, live, refresh, error, values = variant
    update = make_update(name, arguments, state, result=result)
    if variant[0] == "live-worst":  # every input of the card filled in at its longest
        values = {i["id"]: "v" * 4_000 for i in inputs(render_card(update, tool, live=True))}
    return render_card(
        update,
        tool,
        live=live,
        refresh_user_ids=refresh,
        actor_name="Ada " + MARK,
        answered_by_name="Bob " + MARK,
        error=error,
        values=values,
    )


_ESCAPED = re.compile(r"\\.", re.DOTALL)
_LIST_MARK = re.compile(r"^[ \t]*([-+#]|[0-9]+[.)])", re.MULTILINE)
_OUR_DATE = re.compile(r"\{\{(DATE|TIME)\(2026-")


def assert_inert(card: dict[str, Any]) -> None:
    """No model-written text reaches Teams as markup, in any string of the card."""
    for text in [s for s in walk(card) if isinstance(s, str)]:
        assert "<" not in text and ">" not in text, text[:200]
        assert not re.search(r"&#?\w+;", text), text[:200]
    for text in markdown_strings(card):
        bare = _ESCAPED.sub("", text)  # what is left once the backslash escapes are read
        assert not re.search(r"[*_~`]", bare), text[:200]
        assert "](" not in text and "][" not in text and "]:" not in text, text[:200]
        assert not _LIST_MARK.search(text), text[:200]
        for match in re.finditer(r"\{\{", text):
            assert _OUR_DATE.match(text, match.start()), text[:200]


# -- every tool, every state -------------------------------------------------------------------


@pytest.mark.parametrize("variant", VARIANTS, ids=VARIANT_IDS)
@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_every_card_is_valid_inert_and_small(case: Any, state: RenderState, variant: Any) -> None:
    card = _render(case, state, variant)
    live_executing = state is RenderState.EXECUTING and variant[1]
    assert_valid_card(card, interactive=live_executing)  # our rules, then the 1.5 schema
    assert_inert(card)
    assert card_size(card) <= BUDGET


@pytest.mark.parametrize("state", list(RenderState))
@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_only_the_live_executing_card_is_interactive(case: Any, state: RenderState) -> None:
    live, read_only = _render(case, state, VARIANTS[1]), _render(case, state, VARIANTS[2])
    assert interactive_elements(read_only) == []
    if state is RenderState.EXECUTING:
        assert [e["type"] for e in executes(live)]
    else:
        assert interactive_elements(live) == []
        assert "refresh" not in live and "refresh" not in read_only


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_actions_carry_only_the_request_id(case: Any) -> None:
    card = _render(case, RenderState.EXECUTING, VARIANTS[1])
    for action in [*executes(card), card["refresh"]["action"]]:
        assert re.fullmatch(r"hitl_[a-z]+", action["verb"])
        assert action["data"] == {"request_id": REQUEST_ID}


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_declinable_cards_have_no_required_inputs(case: Any) -> None:
    # Teams validates every input of the card before any Action.Execute: a required answer
    # would block Decline until the person answered. Required values are checked on submit.
    card = _render(case, RenderState.EXECUTING)
    if any(a["verb"] == "hitl_decline" for a in executes(card)):
        assert not any(i.get("isRequired") for i in inputs(card))


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_executing_names_the_actor(case: Any) -> None:
    live = markdown_strings(_render(case, RenderState.EXECUTING, VARIANTS[0]))
    read_only = markdown_strings(_render(case, RenderState.EXECUTING, VARIANTS[2]))
    name = teams_text("Ada " + MARK, 100)
    assert any(f"{name}, this is for you." in t for t in live)
    assert any(f"Waiting for {name} to answer." in t for t in read_only)


# -- per tool ------------------------------------------------------------------------------------


def _live(
    tool_name: str, arguments: dict[str, Any], tool: HumanTool | None = None, **kw: Any
) -> dict[str, Any]:
    return render_card(make_update(tool_name, arguments), tool, live=True, **kw)


def _verbs(card: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(a["verb"], a.get("style")) for a in executes(card)]


def _text_of(card: dict[str, Any]) -> str:
    return "\n".join(markdown_strings(card) + plain_strings(card))


def _lines(card: dict[str, Any]) -> str:
    """The body as a person reads it: a line per TextBlock, `title: value` per fact."""
    lines: list[str] = []
    for element in card["body"]:
        if element["type"] == "TextBlock":
            lines.append(element["text"])
        elif element["type"] == "FactSet":
            lines += [f"{f['title']}: {f['value']}" for f in element["facts"]]
    return "\n".join(lines)


def test_approval_has_approve_reject_and_a_reason() -> None:
    card = _live("requestApproval", {"action": "Deploy", "reason": "Release"})
    assert _verbs(card) == [("hitl_approve", "positive"), ("hitl_reject", "destructive")]
    (reason,) = inputs(card)
    assert (reason["type"], reason["id"], reason["isMultiline"]) == ("Input.Text", "reason", True)
    assert reason["placeholder"] == "Reason (optional, for a rejection)"


@pytest.mark.parametrize(("count", "style"), [(1, "expanded"), (5, "expanded"), (6, "compact")])
def test_select_is_a_choice_set_of_indexes(count: int, style: str) -> None:
    options = [f"o{i}" for i in range(count)]
    card = _live("selectOption", {"question": "Pick", "options": options})
    choice, reason = inputs(card)
    assert (choice["type"], choice["id"], choice["style"]) == ("Input.ChoiceSet", "choice", style)
    assert [c["value"] for c in choice["choices"]] == [str(i) for i in range(count)]
    assert [c["title"] for c in choice["choices"]] == options
    assert ("placeholder" in choice) == (style == "compact")
    assert reason["id"] == "reason"
    assert _verbs(card) == [("hitl_select", "positive"), ("hitl_decline", None)]


def test_select_shows_at_most_a_hundred_options_and_says_so() -> None:
    card = _live("selectOption", {"question": "Pick", "options": [f"o{i}" for i in range(200)]})
    assert len(inputs(card)[0]["choices"]) == 100
    assert "Showing the first 100 of 200 options." in _text_of(card)


def test_select_keeps_a_few_long_options_whole() -> None:
    long = "word " * 99  # 495 characters: the core allows 500
    card = _live("selectOption", {"question": "Pick", "options": [long, "b"]})
    assert inputs(card)[0]["choices"][0]["title"] == long


def test_read_only_select_lists_the_options() -> None:
    args = {"question": "Pick", "options": [f"o{i}" for i in range(25)]}
    card = render_card(make_update("selectOption", args), live=False)
    (facts,) = [e for e in card["body"] if e["type"] == "FactSet"]
    assert [f["value"] for f in facts["facts"]] == [f"o{i}" for i in range(20)]
    assert "…and 5 more options" in _text_of(card)


def test_form_has_one_typed_input_per_field() -> None:
    card = _live("collectUserData", {"fields": FIELDS})
    age, email, city, reason = inputs(card)
    assert [i["id"] for i in (age, email, city, reason)] == ["age", "email", "city", "reason"]
    assert age["type"] == "Input.Number"
    assert (email["type"], email["style"], email["regex"]) == ("Input.Text", "Email", EMAIL.pattern)
    assert (city["type"], "style" in city) == ("Input.Text", False)
    assert all(i["errorMessage"] for i in (age, email, city))
    assert [a["verb"] for a in executes(card)] == ["hitl_submit", "hitl_decline"]


def test_email_regex_is_the_cores_and_works_in_javascript_terms() -> None:
    pattern = re.compile(EMAIL.pattern)
    assert pattern.match("a@b.co") and not pattern.match("a@b") and not pattern.match("a b@c.d")


def test_form_fields_named_like_our_keys_get_their_own_ids() -> None:
    fields = [{"name": n, "label": n} for n in ("reason", "request_id", "answer", "ok")]
    ids = [i["id"] for i in inputs(_live("collectUserData", {"fields": fields}))]
    assert ids == ["field.reason", "field.request_id", "field.answer", "ok", "reason"]


def test_form_beyond_thirty_fields_is_cut_and_says_so() -> None:
    card = _live("collectUserData", {"fields": _many_fields(40)})
    assert len(inputs(card)) == 30 + 1  # and the decline reason
    assert "Showing the first 30 of 40 fields." in _text_of(card)


def test_upload_asks_for_a_link_and_an_optional_name() -> None:
    card = _live("uploadFile", {"purpose": "Invoice", "acceptedTypes": [".pdf"]})
    url, name, reason = inputs(card)
    assert (url["id"], url["style"], url["maxLength"]) == ("url", "Url", 2048)
    assert name["id"] == "file_name" and "optional" in name["label"]
    assert reason["id"] == "reason"
    assert _verbs(card) == [("hitl_upload", "positive"), ("hitl_decline", None)]
    text = _text_of(card)
    assert "Accepted: .pdf" in text and "OneDrive or SharePoint" in text


@pytest.mark.parametrize(
    ("severity", "style", "color"),
    [
        ("danger", "destructive", "attention"),
        ("warning", "positive", "warning"),
        ("info", "positive", None),
    ],
)
def test_confirm_styles_follow_the_severity(severity: str, style: str, color: str | None) -> None:
    args = {"title": "Drop table", "message": "Drop it?", "severity": severity}
    card = _live("confirmAction", args)
    assert _verbs(card) == [("hitl_confirm", style), ("hitl_cancel", None)]
    assert inputs(card) == []
    (message,) = [e for e in card["body"] if "Drop it?" in e.get("text", "")]
    assert message.get("color") == color
    assert card["body"][0]["text"] == "Drop table"


def test_question_has_a_multiline_answer() -> None:
    card = _live("AskUserQuestion", {"question": "Which?"})
    answer, reason = inputs(card)
    assert (answer["id"], answer["isMultiline"], reason["id"]) == ("answer", True, "reason")
    assert _verbs(card) == [("hitl_answer", "positive"), ("hitl_decline", None)]


def test_custom_tool_shows_its_arguments_as_facts() -> None:
    card = _live("lookupTicket", {"ticket": "T-1", "n": 5}, CUSTOM_TOOL)
    (facts,) = [e for e in card["body"] if e["type"] == "FactSet"]
    assert facts["facts"] == [{"title": "ticket", "value": "T-1"}, {"title": "n", "value": "5"}]
    assert card["body"][0]["text"] == "lookupTicket"
    assert "Ask for a ticket's status" in _text_of(card)
    answer, _ = inputs(card)
    assert answer["placeholder"] == "Answer with a JSON object"  # TicketAnswer has two fields
    assert [a["verb"] for a in executes(card)] == ["hitl_answer", "hitl_decline"]


def test_custom_tool_without_a_model_takes_plain_text() -> None:
    answer, _ = inputs(_live("freeform", {"q": 1}))
    assert "placeholder" not in answer


def test_a_tools_own_teams_renderer_wins_and_keeps_the_refresh() -> None:
    def render(update: RequestUpdate, *, live: bool) -> dict[str, Any]:
        text = f"mine: {update.state} live={live}"
        return {
            "type": "AdaptiveCard",
            "version": "1.5",
            "body": [{"type": "TextBlock", "text": text}],
        }

    tool = HumanTool("mine", "d", BaseModel, renderers={"teams": render})
    card = _live("mine", {}, tool, refresh_user_ids=[ACTOR])
    assert card["body"][0]["text"] == "mine: executing live=True"
    assert card["refresh"]["userIds"] == [ACTOR]


# -- refresh, errors, values -------------------------------------------------------------------


def test_refresh_asks_teams_for_the_live_card() -> None:
    card = render_card(
        make_update("AskUserQuestion", {"question": "Q"}),
        live=False,
        refresh_user_ids=[ACTOR, "29:b", ACTOR, ""],
    )
    assert card["refresh"] == {
        "action": {
            "type": "Action.Execute",
            "verb": "hitl_refresh",
            "data": {"request_id": REQUEST_ID},
        },
        "userIds": [ACTOR, "29:b"],
    }


def test_refresh_lists_at_most_sixty_users() -> None:
    users = [f"29:{i}" for i in range(70)]
    card = _live("AskUserQuestion", {"question": "Q"}, refresh_user_ids=users)
    assert card["refresh"]["userIds"] == users[:60]


def test_no_refresh_without_users() -> None:
    assert "refresh" not in _live("AskUserQuestion", {"question": "Q"})


def test_error_shows_above_the_inputs_in_attention_colour() -> None:
    card = _live("AskUserQuestion", {"question": "Q"}, error="Not yet " + MARK)
    kinds = [e["type"] for e in card["body"]]
    error = next(e for e in card["body"] if e.get("color") == "attention")
    assert kinds.index("TextBlock", card["body"].index(error)) < kinds.index("Input.Text")
    assert error["text"] == "⚠️ " + teams_text("Not yet " + MARK, 1_000)
    assert [i["id"] for i in inputs(card)] == ["answer", "reason"]


def test_errors_dict_is_shown_with_the_field_labels() -> None:
    errors = {"age": "Enter a number", "email": "Enter a valid email address", "": "Whole card"}
    card = _live("collectUserData", {"fields": FIELDS}, error=errors)
    (error,) = [e for e in card["body"] if e.get("color") == "attention"]
    assert (
        error["text"] == "⚠️ Age: Enter a number\n\nEmail: Enter a valid email address\n\nWhole card"
    )


def test_error_shows_on_a_read_only_and_a_settled_card_too() -> None:
    read_only = render_card(
        make_update("AskUserQuestion", {"question": "Q"}),
        live=False,
        error="This request is for Ada",
    )
    settled = render_card(
        make_update(
            "AskUserQuestion", {"question": "Q"}, RenderState.COMPLETE, result='{"answer":"a"}'
        ),
        live=True,
        error="Already answered",
    )
    assert "This request is for Ada" in _text_of(read_only)
    assert "Already answered" in _text_of(settled)
    assert interactive_elements(read_only) == interactive_elements(settled) == []


def test_values_are_put_back_into_the_inputs() -> None:
    values = {"age": "42", "email": "nope", "city": "Oslo", "reason": "", "other": "x"}
    card = _live("collectUserData", {"fields": FIELDS}, values=values)
    assert [i.get("value") for i in inputs(card)] == [42, "nope", "Oslo", None]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ({"age": "4.5"}, 4.5),
        ({"age": "abc"}, None),  # Input.Number's value must be a number
        ({"age": "nan"}, None),
        ({"age": "1e400"}, None),
    ],
)
def test_number_values_must_be_finite_numbers(values: dict[str, str], expected: Any) -> None:
    (age, _) = inputs(_live("collectUserData", {"fields": FIELDS[:1]}, values=values))
    assert age.get("value") == expected


def test_values_that_do_not_fit_are_left_out() -> None:
    select = _live("selectOption", {"question": "Q", "options": ["a", "b"]}, values={"choice": "7"})
    assert "value" not in inputs(select)[0]
    assert (
        inputs(
            _live("selectOption", {"question": "Q", "options": ["a", "b"]}, values={"choice": "1"})
        )[0]["value"]
        == "1"
    )
    long = _live("AskUserQuestion", {"question": "Q"}, values={"reason": "r" * 2_001})
    assert "value" not in inputs(long)[1]  # over the input's maxLength: not cut, left out


# -- states ----------------------------------------------------------------------------------------


def test_in_progress_shows_no_arguments() -> None:
    update = make_update(
        "AskUserQuestion", {"question": "SECRET-PARTIAL"}, RenderState.IN_PROGRESS, pending_id=""
    )
    card = render_card(update, live=True, refresh_user_ids=[ACTOR])
    assert "Preparing request…" in _text_of(card)
    assert "SECRET-PARTIAL" not in json.dumps(card)
    assert "refresh" not in card and interactive_elements(card) == []


def test_no_actor_means_anyone() -> None:
    update = make_update("AskUserQuestion", {"question": "Q"}, actor_id=None)
    assert "Anyone here can answer." in _text_of(render_card(update, live=True))
    assert "Waiting for an answer." in _text_of(render_card(update, live=False))


def test_actor_id_stands_in_for_a_missing_name() -> None:
    update = make_update("AskUserQuestion", {"question": "Q"}, actor_id="29:<at>x</at>")
    shown = "29:\u2039at\u203ax\u2039/at\u203a, this is for you."
    assert shown in _text_of(render_card(update, live=True))


def test_executing_shows_the_deadline() -> None:
    card = render_card(make_update("AskUserQuestion", {"question": "Q"}), live=False)
    assert f"Expires {teams_date(CREATED + timedelta(minutes=5))}." in _text_of(card)


@pytest.mark.parametrize(
    ("name", "arguments", "result", "shown"),
    [
        ("AskUserQuestion", {"question": "Q"}, '{"answer":"eu-west"}', "eu-west"),
        ("requestApproval", {"action": "a", "reason": "r"}, '{"approved":true}', "Approved"),
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
            "Selected\ny",
        ),
        (
            "collectUserData",
            {"fields": FIELDS},
            '{"age":42,"email":"a@b.co","city":"Oslo"}',
            "Age: 42",
        ),
        (
            "uploadFile",
            {"purpose": "p"},
            '{"fileName":"a.pdf","fileSize":2048,"url":"https://x.example/a.pdf"}',
            "Link: https://x.example/a.pdf",
        ),
        ("confirmAction", {"title": "t", "message": "m"}, '{"confirmed":false}', "Cancelled"),
        ("custom", {"q": 1}, "plain words", "plain words"),
    ],
)
def test_complete_says_who_when_and_what(
    name: str, arguments: dict[str, Any], result: str, shown: str
) -> None:
    update = make_update(name, arguments, RenderState.COMPLETE, result=result)
    card = render_card(update, live=True, answered_by_name="Bob")
    text = _lines(card)
    assert f"✅ Answered by Bob {teams_date(CREATED + timedelta(minutes=1))}" in text
    assert shown in text


def test_complete_without_a_name_shows_the_answerers_id() -> None:
    update = make_update(
        "AskUserQuestion", {"question": "Q"}, RenderState.COMPLETE, result='{"answer":"a"}'
    )
    assert f"Answered by {ANSWERER}" in _text_of(render_card(update, live=False))


def test_rejected_says_by_whom_and_why() -> None:
    update = make_update("requestApproval", {"action": "a", "reason": "r"}, RenderState.REJECTED)
    card = render_card(update, live=True, answered_by_name="Bob")
    text = _text_of(card)
    assert f"🚫 Rejected by Bob {teams_date(CREATED + timedelta(minutes=1))}" in text
    assert teams_text("Not now " + MARK, 3_000) in text
    assert card["fallbackText"] == "Rejected: Approval needed: a"


def test_expired_shows_the_deadline_and_no_actions() -> None:
    card = render_card(
        make_update("AskUserQuestion", {"question": "Q"}, RenderState.EXPIRED), live=True
    )
    assert f"⌛ Expired {teams_date(CREATED + timedelta(minutes=5))}" in _text_of(card)
    assert "actions" not in card and interactive_elements(card) == []


def test_cancelled_says_withdrawn_and_has_no_actions() -> None:
    card = render_card(
        make_update("AskUserQuestion", {"question": "Q"}, RenderState.CANCELLED), live=True
    )
    assert "Withdrawn: no answer is needed any more." in _text_of(card)
    assert "actions" not in card and interactive_elements(card) == []


def test_fallback_text_is_short_and_inert() -> None:
    card = _live("AskUserQuestion", {"question": MARK * 50})
    assert card["fallbackText"].startswith("Question: ")
    assert byte_length(card["fallbackText"]) <= 300


def test_unusable_request_id_is_refused() -> None:
    for bad in ("", " padded ", "x" * 201):
        with pytest.raises(ValueError, match="request id"):
            render_card(
                make_update("AskUserQuestion", {"question": "Q"}, pending_id=bad), live=True
            )


def test_teams_date_format() -> None:
    expected = "{{DATE(2026-01-02T03:04:05Z, SHORT)}} {{TIME(2026-01-02T03:04:05Z)}}"
    assert teams_date(CREATED) == expected
    assert teams_date(CREATED.replace(tzinfo=None)) == expected  # naive is taken as UTC


# -- size ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("selectOption", {"question": "😀" * 10_000, "options": ["😀" * 500] * 100}),
        (
            "collectUserData",
            {
                "fields": [
                    {"name": f"f{i}", "label": "😀" * 200, "type": "email"} for i in range(30)
                ]
            },
        ),
        ("AskUserQuestion", {"question": "<" * 10_000}),  # each < becomes a 3-byte character
        ("requestApproval", {"action": "\\" * 10_000, "reason": "*" * 10_000}),  # escapes double
    ],
)
def test_largest_requests_stay_well_under_the_limit(name: str, arguments: dict[str, Any]) -> None:
    users = [f"29:{i:090d}" for i in range(60)]
    for state in RenderState:
        update = make_update(name, arguments, state, result='{"answer":"a"}')
        card = render_card(update, live=True, refresh_user_ids=users, error="e" * 5_000)
        assert card_size(card) <= BUDGET, (state, card_size(card))


def test_an_oversized_card_has_its_texts_cut_never_its_structure() -> None:
    # 60 refresh ids of 150 characters leave too little room for the texts' own budgets: the
    # safety net cuts texts further, never a choice's value or one of our date lines.
    update = make_update("selectOption", {"question": "😀" * 10_000, "options": ["😀" * 500] * 100})
    roomy = render_card(update, live=True)
    users = [f"29:{i:0150d}" for i in range(60)]
    tight = render_card(update, live=True, refresh_user_ids=users, error="e" * 5_000)
    assert card_size(roomy) + card_size({"userIds": users}) > BUDGET  # it would not fit uncut
    assert card_size(tight) <= BUDGET
    assert [c["value"] for c in inputs(tight)[0]["choices"]] == [str(i) for i in range(100)]
    assert len(tight["body"][1]["text"]) < len(roomy["body"][1]["text"])
    assert f"Expires {teams_date(CREATED + timedelta(minutes=5))}." in _text_of(tight)
    assert_valid_card(tight, interactive=True)


# -- the text helpers --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "shown"),
    [
        ("plain words", "plain words"),
        ("[click](https://evil)", "[click]\u2060(https://evil)"),
        ("<at>Everyone</at>", "\u2039at\u203aEveryone\u2039/at\u203a"),
        ("**bold** _it_ ~s~ `c`", "\\*\\*bold\\*\\* \\_it\\_ \\~s\\~ \\`c\\`"),
        ("a \\*b", "a \\\\\\*b"),  # a backslash of theirs cannot cancel one of ours
        ("&lt;at&gt; & co", "&\u2060lt;at&\u2060gt; & co"),
        ("{{DATE(2000-01-01T00:00:00Z)}}", "{\u2060{DATE(2000-01-01T00:00:00Z)}}"),
        ("- a\n+ b\n# c\n12. d\n 3) e", "\\- a\n\\+ b\n\\# c\n12\\. d\n 3\\) e"),
        ("x\u202eevil\u2066\x00\x07y", "xevily"),  # bidi overrides and control characters
        ("lone \ud800 surrogate", "lone \ufffd surrogate"),
        ("😀 https://plain.example/a_b", "😀 https://plain.example/a\\_b"),
    ],
)
def test_teams_text_makes_markup_inert(raw: str, shown: str) -> None:
    assert teams_text(raw, 1_000) == shown


def test_plain_text_defuses_tags_without_backslashes() -> None:
    assert (
        plain_text("<at>x</at> **b** [l](u)", 100) == "\u2039at\u203ax\u2039/at\u203a **b** [l](u)"
    )


def test_byte_length_counts_what_json_sends() -> None:
    assert byte_length("a") == 1
    assert byte_length("é") == 2
    assert byte_length("😀") == 4
    assert byte_length('"\\\n') == 6
    assert byte_length("\x01") == 6
    assert byte_length("x" * 3) == len(json.dumps("x" * 3, ensure_ascii=False)) - 2


@pytest.mark.parametrize("limit", [0, 1, 3, 4, 5, 10, 77, 300, 3_000])
def test_cut_never_exceeds_the_limit(limit: int) -> None:
    for text in ["x" * 5_000, "😀" * 5_000, teams_text(MARK * 100, 100_000), '"\\' * 3_000]:
        out = cut(text, limit)
        assert byte_length(out) <= limit
        assert out == text or out.endswith("…") or out == ""


@pytest.mark.parametrize("limit", range(4, 40))
def test_cut_never_splits_an_escape(limit: int) -> None:
    out = teams_text("*](" * 50, limit).removesuffix("…")
    assert not out.endswith("\\")
    assert _ESCAPED.sub("", out).count("*") == 0
    assert "](" not in out


def test_cut_keeps_short_text_and_marks_a_cut() -> None:
    assert cut("abc", 3) == "abc"
    assert cut("abcdef", 5) == "ab…"


# -- the checker itself: it must see what it is there to see ---------------------------------


def _card(*body: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "AdaptiveCard", "version": "1.5", "body": list(body), **extra}


def _execute(verb: str | None = "hitl_x", data: Any = None, **extra: Any) -> dict[str, Any]:
    data = {"request_id": "r"} if data is None else data
    action = {"type": "Action.Execute", "title": "Go", "data": data, **extra}
    if verb is not None:
        action["verb"] = verb
    return action


_TEXT = {"type": "TextBlock", "text": "x"}
_INPUT = {"type": "Input.Text", "id": "a"}


@pytest.mark.parametrize(
    ("card", "interactive", "problem"),
    [
        (_card(_INPUT, _INPUT), True, "duplicate input id"),
        (_card(_INPUT), False, "Input.Text on a read-only card"),
        (_card(_TEXT, actions=[_execute()]), False, "interactive Action.Execute"),
        (_card(_TEXT, actions=[_execute(verb=None)]), True, "without a verb"),
        (_card(_TEXT, actions=[_execute(data={"x": 1})]), True, "without data.request_id"),
        (_card({**_TEXT, "color": "bogus-attention"}), True, "color 'bogus-attention'"),
        (
            _card(
                {
                    "type": "Input.ChoiceSet",
                    "id": "c",
                    "choices": [{"title": "a", "value": "1"}] * 2,
                }
            ),
            True,
            "duplicate choice values",
        ),
        (_card({"type": "TextBlock", "text": " "}), True, "empty TextBlock"),
        (_card(_TEXT, actions=[_execute()] * 7), True, "7 actions > 6"),
        (_card({**_TEXT, "text": "x" * 28_000}), True, "bytes >= 28000"),
        (
            _card(_TEXT, refresh={"action": _execute(), "userIds": [str(i) for i in range(61)]}),
            False,
            "61 ids",
        ),
        (_card(_TEXT, refresh={"action": _execute(data={})}), False, "refresh.action"),
        (_card(_TEXT, version="1.6"), True, "version '1.6'"),
    ],
)
def test_checker_catches(card: dict[str, Any], interactive: bool, problem: str) -> None:
    problems = card_problems(card, interactive=interactive)
    assert any(problem in p for p in problems), problems


def test_checker_allows_a_refresh_on_a_read_only_card() -> None:
    card = _card(_TEXT, refresh={"action": _execute(), "userIds": ["29:a"]})
    assert card_problems(card, interactive=False) == []


@pytest.mark.parametrize(
    "card",
    [
        _card({"type": "TextBlock"}),  # no text
        _card({"type": "Input.Text"}),  # no id
        _card(_TEXT, msteams={"width": "Full"}),  # not in the 1.5 schema
        _card({"type": "Input.Number", "id": "n", "value": "42"}),  # value must be a number
        _card(_TEXT, actions=[{"type": "Action.Execute", "verb": "v", "tooltip": 1}]),
    ],
)
def test_schema_catches_a_bad_card(card: dict[str, Any]) -> None:
    assert schema_problems(card)


def test_schema_copy_matches_the_conformance_one() -> None:
    root = os.environ.get("HITL_CONFORMANCE_DIR")
    shared = Path(root, "teams", SCHEMA.name) if root else None
    if shared is None or not shared.is_file():
        pytest.skip("HITL_CONFORMANCE_DIR not set or schema missing")
    assert SCHEMA.read_bytes() == shared.read_bytes()


def test_elements_leave_out_the_refresh() -> None:
    card = _live("AskUserQuestion", {"question": "Q"}, refresh_user_ids=[ACTOR])
    assert all(e.get("verb") != "hitl_refresh" for e in elements(card))
