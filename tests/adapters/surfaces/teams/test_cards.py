"""Adaptive Cards: the core's view of every tool in every state, live and read-only, drawn;
adversarial inputs, the byte budget, the AC 1.5 schema and the rules a schema cannot say."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from adapters.surfaces.teams.cards import Drawing, render_card
from adapters.surfaces.teams.inputs import Filled
from adapters.surfaces.teams.text import TeamsFormatter, byte_length, cut, plain_text, teams_text
from bot.human_input import RenderState, RequestUpdate
from bot.human_tools.forms import EMAIL, URL
from bot.human_tools.tool import BUILTIN_TOOLS, HumanTool
from bot.requests.kinds import Verb
from bot.requests.view import build_view
from bot.words.phrases import Phrase
from tests.adapters.surfaces.teams.card_rules import (
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
from tests.conformance import conformance_file

pytestmark = pytest.mark.fast  # pure functions: in `make check`

REQUEST_ID = "0123456789abcdef01234567"
ACTOR = "aad-actor"
ANSWERER = "aad-answerer"
CREATED = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
REFRESH = ["29:1actor", "29:1approver"]
# Everything a model could slip in to ping, hide a link, fake markup or a card function.
MARK = (
    "[click](https://evil.example) <at>Everyone</at> **bold** _it_ <b>x</b> &lt;at&gt; "
    "{{DATE(1999-01-01T00:00:00Z, SHORT)}} ![img](https://evil.example/i.png) \\*"
)
BUDGET = 24_000  # the adapter's promise: well under Teams's ~28 KB
NAMES = {ACTOR: "Ada " + MARK, ANSWERER: "Bob " + MARK}


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
        "room_id": "teams:19:conversation;messageid=1",
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


def fmt(names: dict[str, str] | None = None) -> TeamsFormatter:
    known = NAMES if names is None else names
    return TeamsFormatter(known.get)


def draw(
    tool_name: str,
    arguments: dict[str, Any],
    state: RenderState = RenderState.EXECUTING,
    *,
    tool: HumanTool | None = None,
    live: bool = True,
    names: dict[str, str] | None = None,
    **drawing: Any,
) -> dict[str, Any]:
    update = make_update(tool_name, arguments, state, **drawing.pop("changes", {}))
    tool = tool or BUILTIN_TOOLS.get(tool_name)
    return render_card(update, tool, live=live, drawing=Drawing(fmt=fmt(names), **drawing))


class TicketAnswer(BaseModel):
    status: str
    priority: int


class Note(BaseModel):
    note: str


CUSTOM_TOOL = HumanTool(
    "lookupTicket", "Ask for a ticket's status " + MARK, BaseModel, TicketAnswer
)
ALL_KINDS = ["text", "long_text", "number", "integer", "email", "url", "date", "time",
             "datetime", "boolean", "choice", "choices", "user"]  # fmt: skip


def field_of(kind: str, i: int = 0, label: str = "") -> dict[str, Any]:
    spec: dict[str, Any] = {"name": f"{kind}_{i}", "label": label or kind.title(), "type": kind}
    if kind in ("choice", "choices"):
        spec["options"] = [f"{MARK[:40]} {n}" for n in range(3)]
    return spec


EVERY_KIND = [field_of(kind) for kind in ALL_KINDS]


def _many_fields(n: int) -> list[dict[str, Any]]:
    return [field_of(ALL_KINDS[i % 13], i, f"{MARK} {i}") for i in range(n)]


def _wide_choices() -> list[dict[str, Any]]:
    options = [f"{'😀' * 140} {n}" for n in range(100)]
    return [{"name": f"c{i}", "label": "😀" * 200, "type": "choices", "options": options,
             "description": "😀" * 300} for i in range(20)]  # fmt: skip


# (case id, tool name, arguments, the stored answer when complete, a custom HumanTool)
CASES: list[tuple[str, str, dict[str, Any], str, HumanTool | None]] = [
    ("ask", "AskUserQuestion", {"question": "Which region? " + MARK}, '{"answer":"eu"}', None),
    ("ask-10k", "AskUserQuestion", {"question": "q" * 10_000},
     json.dumps({"answer": "a" * 10_000}), None),
    ("ask-huge", "AskUserQuestion", {"question": MARK * 120}, json.dumps({"answer": MARK * 80}),
     None),
    ("ask-emoji", "AskUserQuestion", {"question": "😀" * 10_000}, '{"answer":"😀"}', None),
    ("ask-empty", "AskUserQuestion", {"question": ""}, '{"answer":" "}', None),
    ("approval", "requestApproval", {"action": "Deploy " + MARK, "reason": "Release " + MARK},
     json.dumps({"approved": False, "reason": MARK}), None),
    ("approval-huge", "requestApproval", {"action": MARK * 100, "reason": "&" * 10_000},
     '{"approved":true}', None),
    ("select-3", "selectOption", {"question": "Pick " + MARK, "options": ["a " + MARK, "b", "c"]},
     json.dumps({"selectedIndex": 0, "selectedValue": "a " + MARK}), None),
    ("select-100", "selectOption", {"question": "q" * 10_000, "options": ["😀" * 500] * 100},
     json.dumps({"selectedIndex": 99, "selectedValue": "😀" * 500}), None),
    ("select-200", "selectOption",
     {"question": MARK * 100, "options": [f"{MARK} {i}" * 6 for i in range(200)]},
     json.dumps({"selectedIndex": 150, "selectedValue": MARK}), None),
    ("form-every-kind", "collectUserData", {"fields": EVERY_KIND},
     json.dumps({"text_0": MARK, "number_0": 4.5, "boolean_0": True, "choices_0": ["a"]}), None),
    ("form-reserved-names", "collectUserData",
     {"fields": [{"name": "reason", "label": "Reason"}, {"name": "request_id", "label": "Id"}]},
     '{"reason":"r","request_id":"x"}', None),
    ("form-20", "collectUserData", {"fields": _many_fields(20)},
     json.dumps({f"f{i}": MARK for i in range(20)}), None),
    ("form-40", "collectUserData", {"fields": _many_fields(40)},
     json.dumps({f"f{i}": MARK * 20 for i in range(40)}), None),
    ("form-wide-choices", "collectUserData", {"fields": _wide_choices()}, "{}", None),
    ("form-odd-fields", "collectUserData",
     {"fields": ["x", {"name": "1bad"}, {"name": "ok", "label": ""}, {"name": "ok"}, 7]},
     '{"ok":"fine"}', None),
    ("upload", "uploadFile", {"purpose": "Invoice " + MARK, "acceptedTypes": [".PDF", MARK]},
     json.dumps({"fileName": MARK + ".pdf", "fileSize": 0, "url": "https://x.example/a?b=1&c=2"}),
     None),
    ("upload-evil-url", "uploadFile", {"purpose": "x", "acceptedTypes": []},
     json.dumps({"fileName": "a.pdf", "fileSize": 5, "url": "https://x/<at>Everyone</at>"}), None),
    ("confirm-danger", "confirmAction",
     {"title": "T" * 300 + MARK, "message": MARK * 200, "severity": "danger"},
     '{"confirmed":true}', None),
    ("confirm-warning", "confirmAction",
     {"title": "Heads up " + MARK, "message": "Sure? " + MARK, "severity": "warning"},
     '{"confirmed":false}', None),
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
OPEN = {  # the verb whose form an Invalid outcome leaves open, per tool
    "AskUserQuestion": Verb.ANSWER,
    "selectOption": Verb.CHOOSE,
    "collectUserData": Verb.SUBMIT,
    "uploadFile": Verb.SUBMIT,
    "requestApproval": Verb.DECLINE,
    "confirmAction": Verb.DECLINE,
}

# How each card is drawn: (variant id, live, refresh ids, notice, the form left open)
VARIANTS: list[tuple[str, bool, list[str], str | None, bool]] = [
    ("live", True, [], None, False),
    ("live-refresh", True, REFRESH, None, False),
    ("read-only-refresh", False, REFRESH, None, False),
    # The largest a card gets: 60 long refresh ids, a long notice, the form open with every
    # input filled in at its longest and an error under every field.
    ("live-worst", True, [f"29:{i:090d}" for i in range(60)], MARK * 50, True),
]
VARIANT_IDS = [v[0] for v in VARIANTS]


def _render(
    case: tuple[str, str, dict[str, Any], str, HumanTool | None],
    state: RenderState,
    variant: tuple[str, bool, list[str], str | None, bool] = VARIANTS[0],
) -> dict[str, Any]:
    _, name, arguments, result, tool = case
    _, live, refresh, notice, worst = variant
    drawing: dict[str, Any] = {"refresh_user_ids": refresh, "changes": {"result": result}}
    if notice is not None:
        drawing["notice"] = Phrase(notice)
    if worst:
        verb = OPEN.get(name, Verb.ANSWER if tool is None else Verb.SUBMIT)
        fresh = draw(name, arguments, state, tool=tool, live=True)
        ids = [i["id"] for i in inputs(fresh)]
        errors = {i.split(".")[1]: MARK * 20 for i in ids} | {"": MARK * 20}
        drawing.update(open=verb, filled=Filled({i: "v" * 4_000 for i in ids}, errors))
    return draw(name, arguments, state, tool=tool, live=live, **drawing)


_ESCAPED = re.compile(r"\\.", re.DOTALL)
_LIST_MARK = re.compile(r"^[ \t]*([-+#]|[0-9]+[.)])", re.MULTILINE)


def assert_inert(card: dict[str, Any]) -> None:
    """No model-written text reaches Teams as markup, in any string of the card."""
    ours = {EMAIL.pattern, URL.pattern}  # an input's regex: ours, and never shown
    for text in [s for s in walk(card) if isinstance(s, str) and s not in ours]:
        assert "<" not in text and ">" not in text, text[:200]
        assert not re.search(r"&#?\w+;", text), text[:200]
    for text in markdown_strings(card):
        bare = _ESCAPED.sub("", text)  # what is left once the backslash escapes are read
        assert not re.search(r"[*_~`]", bare), text[:200]
        assert "](" not in text and "][" not in text and "]:" not in text, text[:200]
        assert not _LIST_MARK.search(text), text[:200]
        assert "{{" not in text, text[:200]


def _text_of(card: dict[str, Any]) -> str:
    return "\n".join(markdown_strings(card) + plain_strings(card))


def _ids(card: dict[str, Any]) -> list[str]:
    return [i["id"] for i in inputs(card)]


def _verbs(card: dict[str, Any]) -> list[tuple[str, str | None]]:
    return [(a["verb"], a.get("style")) for a in executes(card)]


def _shown(card: dict[str, Any], title: str) -> dict[str, Any]:
    """The card the button `title` shows."""
    (action,) = [a for a in card["actions"] if a["title"] == title]
    assert action["type"] == "Action.ShowCard"
    shown: dict[str, Any] = action["card"]
    return shown


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
        assert executes(live)
        assert live["refresh"] == read_only["refresh"]
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
def test_every_request_can_be_declined(case: Any) -> None:
    card = _render(case, RenderState.EXECUTING)
    decline = _shown(card, "Decline")
    assert [i["id"] for i in inputs(decline)] == ["decline.reason"]
    assert [a["verb"] for a in decline["actions"]] == ["hitl_decline"]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_inputs_in_the_body_are_never_required(case: Any) -> None:
    # Teams checks every input of a card, and of its parents, before an action runs: a
    # required input in the body would hold back every other control (Decline too).
    card = _render(case, RenderState.EXECUTING, VARIANTS[3])
    assert not [e for e in card["body"] if e.get("isRequired")]


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_executing_names_the_actor_on_both_cards(case: Any) -> None:
    name = teams_text("Ada " + MARK, 100)
    for variant in (VARIANTS[0], VARIANTS[2]):
        text = _text_of(_render(case, RenderState.EXECUTING, variant))
        assert f"{name}, this is for you. Expires 2026-01-02 03:09 UTC." in text


# -- per tool ------------------------------------------------------------------------------------


def test_approval_has_approve_and_a_decline_that_asks_why() -> None:
    card = draw("requestApproval", {"action": "Deploy", "reason": "Release"})
    assert card["actions"][0] == {
        "type": "Action.Execute", "title": "Approve", "verb": "hitl_approve",
        "data": {"request_id": REQUEST_ID}, "style": "positive",
    }  # fmt: skip
    (reason,) = inputs(_shown(card, "Decline"))
    assert (reason["type"], reason["label"], reason["isMultiline"]) == (
        "Input.Text", "Reason (optional)", True,
    )  # fmt: skip
    assert "isRequired" not in reason
    facts = [e for e in card["body"] if e["type"] == "FactSet"]
    assert facts[0]["facts"] == [{"title": "Action", "value": "Deploy"},
                                 {"title": "Reason", "value": "Release"}]  # fmt: skip


def test_select_is_a_compact_numbered_choice_set_behind_choose() -> None:
    card = draw("selectOption", {"question": "Pick", "options": ["red", "green", "blue"]})
    choose = _shown(card, "Choose")
    (choice,) = inputs(choose)
    assert (choice["type"], choice["id"], choice["style"]) == (
        "Input.ChoiceSet", "choice.choice", "compact",
    )  # fmt: skip
    assert choice["choices"] == [{"title": "1. red", "value": "0"},
                                 {"title": "2. green", "value": "1"},
                                 {"title": "3. blue", "value": "2"}]  # fmt: skip
    assert (choice["isRequired"], choice["errorMessage"]) == (True, "Choose one of the options")
    assert _verbs(choose) == [("hitl_choose", "positive")]


def test_select_shows_a_hundred_options_and_says_so() -> None:
    card = draw("selectOption", {"question": "Pick", "options": [f"o{i}" for i in range(200)]})
    (choice,) = inputs(_shown(card, "Choose"))
    assert len(choice["choices"]) == 100
    assert "Showing the first 100 of 200 options." in _text_of(card)


def test_a_hundred_options_sharing_75_characters_are_told_apart_by_number() -> None:
    prefix = "Deploy the payments service to the eu-west-1 production cluster, then ver"
    options = [f"{prefix}ify {i}" for i in range(100)]
    assert len(prefix) + 3 >= 75 and len({o[:75] for o in options}) == 1
    card = draw("selectOption", {"question": "Which?", "options": options})
    (choice,) = inputs(_shown(card, "Choose"))
    titles = [c["title"] for c in choice["choices"]]
    assert len(set(titles)) == 100
    assert [t.split(". ", 1)[0] for t in titles] == [str(i) for i in range(1, 101)]
    # The options are longer than a control shows: the card lists them whole, numbered.
    listed = _text_of(card)
    assert f"1\\. {prefix}ify 0" in listed and f"100\\. {prefix}ify 99" in listed


def test_select_keeps_a_few_long_options_whole() -> None:
    long = "word " * 99  # 495 characters: the core allows 500
    card = draw("selectOption", {"question": "Pick", "options": [long, "b"]})
    (choice,) = inputs(_shown(card, "Choose"))
    assert choice["choices"][0]["title"] == "1. " + long


def test_every_field_kind_has_its_input() -> None:
    card = draw("collectUserData", {"fields": EVERY_KIND}, people=((ACTOR, "Ada"),))
    form = _shown(card, "Open form")
    by_id = {i["id"]: i for i in inputs(form)}
    kinds = {k: (v["type"], v.get("style"), v.get("isMultiline"), v.get("isMultiSelect"))
             for k, v in by_id.items()}  # fmt: skip
    assert kinds == {
        "form.text_0": ("Input.Text", None, None, None),
        "form.long_text_0": ("Input.Text", None, True, None),
        "form.number_0": ("Input.Number", None, None, None),
        "form.integer_0": ("Input.Number", None, None, None),
        "form.email_0": ("Input.Text", "email", None, None),
        "form.url_0": ("Input.Text", "url", None, None),
        "form.date_0": ("Input.Date", None, None, None),
        "form.time_0": ("Input.Time", None, None, None),
        "form.datetime_0.date": ("Input.Date", None, None, None),
        "form.datetime_0.time": ("Input.Time", None, None, None),
        "form.boolean_0": ("Input.Toggle", None, None, None),
        "form.choice_0": ("Input.ChoiceSet", "compact", None, None),
        "form.choices_0": ("Input.ChoiceSet", "compact", None, True),
        "form.user_0": ("Input.ChoiceSet", "compact", None, None),
        "form.user_0.other": ("Input.Text", None, None, None),
    }
    assert by_id["form.email_0"]["regex"] == EMAIL.pattern
    assert by_id["form.user_0"]["choices"] == [{"title": "Ada", "value": ACTOR}]
    toggle = by_id["form.boolean_0"]
    assert (toggle["title"], toggle["valueOn"], toggle["valueOff"]) == ("Boolean", "true", "false")
    required = [i for i, e in by_id.items() if e.get("isRequired")]
    assert "form.boolean_0" not in required and "form.user_0.other" not in required
    assert all(by_id[i]["errorMessage"] for i in required)
    assert by_id["form.number_0"]["errorMessage"] == "Enter a number"
    assert _verbs(form) == [("hitl_submit", "positive")]


def test_a_person_field_without_people_known_takes_an_id() -> None:
    card = draw("collectUserData", {"fields": [field_of("user")]})
    (user,) = inputs(_shown(card, "Open form"))
    assert (user["type"], user["id"], user["isRequired"]) == ("Input.Text", "form.user_0", True)


def test_fields_have_their_limits_descriptions_and_values() -> None:
    fields = [
        {"name": "n", "label": "N", "type": "integer", "min": 1, "max": 9, "required": False,
         "description": "How many " + MARK},
        {"name": "b", "label": "B", "type": "boolean"},
    ]  # fmt: skip
    form = _shown(draw("collectUserData", {"fields": fields}), "Open form")
    n, b = inputs(form)
    assert (n["min"], n["max"], "isRequired" in n) == (1, 9, False)
    assert any(e.get("text") == teams_text("How many " + MARK, 300) for e in form["body"])
    assert b["value"] == "false"


def test_reserved_field_names_cannot_touch_our_keys() -> None:
    fields = [{"name": n, "label": n} for n in ("reason", "request_id", "ok")]
    card = draw("collectUserData", {"fields": fields})
    assert _ids(card) == ["form.reason", "form.request_id", "form.ok", "decline.reason"]


def test_form_beyond_thirty_fields_is_cut_and_says_so() -> None:
    # More fields than the core allows: shown tolerantly (as text fields), at most 30.
    card = _render(CASES[CASE_IDS.index("form-40")], RenderState.EXECUTING)
    assert len(inputs(_shown(card, "Open form"))) == 30
    assert "Showing the first 30 of 40 fields." in _text_of(card)


def test_upload_asks_for_a_link_and_an_optional_name() -> None:
    card = draw("uploadFile", {"purpose": "Invoice", "acceptedTypes": [".pdf"]})
    form = _shown(card, "Upload file")
    link, name = inputs(form)
    assert (link["id"], link["style"], link["isRequired"]) == ("upload.file.url", "url", True)
    assert (name["id"], "isRequired" in name) == ("upload.file.name", False)
    assert "OneDrive or SharePoint" in _text_of(form)
    assert {"title": "Accepted", "value": ".pdf"} in card["body"][1]["facts"]


@pytest.mark.parametrize(
    ("severity", "container", "style"),
    [("danger", "attention", "destructive"), ("warning", "warning", "positive"),
     ("info", None, "positive")],
)  # fmt: skip
def test_confirm_follows_the_severity(severity: str, container: str | None, style: str) -> None:
    args = {"title": "Drop table", "message": "Drop it?", "severity": severity}
    card = draw("confirmAction", args)
    top = card["body"][0]
    if container is None:
        assert top["text"] == "Drop table"
    else:
        assert (top["type"], top["style"]) == ("Container", container)
        assert top["items"][0]["text"] == "Drop table"
    assert _verbs(card) == [("hitl_confirm", style), ("hitl_cancel", None), ("hitl_decline", None)]
    if severity == "danger":  # the core asks for a second thought: the button shows it first
        sure = _shown(card, "Confirm")
        assert sure["body"][0]["text"] == "Are you sure? This cannot be undone."


def test_question_has_a_multiline_answer() -> None:
    card = draw("AskUserQuestion", {"question": "Which?"})
    (answer,) = inputs(_shown(card, "Answer"))
    assert (answer["id"], answer["isMultiline"], answer["isRequired"]) == (
        "answer.answer", True, True,
    )  # fmt: skip
    assert _verbs(card) == [("hitl_answer", "positive"), ("hitl_decline", None)]


def test_custom_tool_shows_its_arguments_and_a_form_of_its_answer() -> None:
    card = draw("lookupTicket", {"ticket": "T-1", "n": 5}, tool=CUSTOM_TOOL)
    (facts,) = [e for e in card["body"] if e["type"] == "FactSet"]
    assert facts["facts"] == [{"title": "ticket", "value": "T-1"}, {"title": "n", "value": "5"}]
    assert card["body"][0]["text"] == "lookupTicket"
    assert "Ask for a ticket's status" in _text_of(card)
    status, priority = inputs(_shown(card, "Answer"))
    assert (status["id"], priority["id"], priority["type"]) == (
        "form.status", "form.priority", "Input.Number",
    )  # fmt: skip


@pytest.mark.parametrize("tool", [None, HumanTool("takeNote", "d", BaseModel, Note)])
def test_custom_tool_with_a_text_answer_takes_text(tool: HumanTool | None) -> None:
    (answer,) = inputs(_shown(draw("takeNote", {"q": 1}, tool=tool), "Answer"))
    assert answer["id"] == "answer.answer"  # {"note": text} for the model: the core's to say


def test_a_tools_own_teams_renderer_wins_and_keeps_the_refresh() -> None:
    def render(update: RequestUpdate, *, live: bool) -> dict[str, Any]:
        text = f"mine: {update.state} live={live}"
        return {"type": "AdaptiveCard", "version": "1.5",
                "body": [{"type": "TextBlock", "text": text}]}  # fmt: skip

    tool = HumanTool("mine", "d", BaseModel, renderers={"teams": render})
    card = draw("mine", {}, tool=tool, refresh_user_ids=["29:a"])
    assert card["body"][0]["text"] == "mine: executing live=True"
    assert card["refresh"]["userIds"] == ["29:a"]


# -- refresh, notices, forms left open ------------------------------------------------------------


def test_refresh_asks_teams_for_the_live_card() -> None:
    card = draw("AskUserQuestion", {"question": "Q"}, live=False,
                refresh_user_ids=["29:a", "29:b", "29:a", ""])  # fmt: skip
    assert card["refresh"] == {
        "action": {"type": "Action.Execute", "verb": "hitl_refresh",
                   "data": {"request_id": REQUEST_ID}},
        "userIds": ["29:a", "29:b"],
    }  # fmt: skip


def test_refresh_lists_at_most_sixty_users() -> None:
    users = [f"29:{i}" for i in range(70)]
    card = draw("AskUserQuestion", {"question": "Q"}, refresh_user_ids=users)
    assert card["refresh"]["userIds"] == users[:60]


def test_no_refresh_without_users() -> None:
    assert "refresh" not in draw("AskUserQuestion", {"question": "Q"})


def test_a_notice_shows_in_attention_colour_with_names() -> None:
    notice = Phrase("This request is for {actor}.", {"actor": ACTOR})
    for state in (RenderState.EXECUTING, RenderState.COMPLETE):
        names = {ACTOR: "Ada <at>x</at>"}
        result = {"result": '{"answer":"a"}'}
        card = draw("AskUserQuestion", {"question": "Q"}, state, live=False, notice=notice,
                    names=names, changes=result)  # fmt: skip
        (shown,) = [e for e in card["body"] if e.get("color") == "attention"]
        assert shown["text"] == "⚠️ This request is for Ada \u2039at\u203ax\u2039/at\u203a."
        assert interactive_elements(card) == []


def test_an_open_form_is_in_the_body_with_values_and_errors_under_their_fields() -> None:
    fields = [{"name": "age", "label": "Age", "type": "number"},
              {"name": "email", "label": "Email", "type": "email"},
              {"name": "city", "label": "City"}]  # fmt: skip
    values = {"form.age": "42", "form.email": "nope", "form.city": "", "decline.reason": "x"}
    errors = {"email": "Enter a valid email address", "": "Something " + MARK}
    card = draw("collectUserData", {"fields": fields}, open=Verb.SUBMIT,
                filled=Filled(values, errors))  # fmt: skip
    body = card["body"]
    tail = [(e["type"], e.get("id") or e.get("text")) for e in body[-5:]]
    assert tail == [
        ("TextBlock", "⚠️ " + teams_text("Something " + MARK, 1_000)),
        ("Input.Number", "form.age"),
        ("Input.Text", "form.email"),
        ("TextBlock", "⚠️ Enter a valid email address"),
        ("Input.Text", "form.city"),
    ]
    age, email, city = [e for e in body if str(e["type"]).startswith("Input.")]
    assert (age.get("value"), email.get("value"), "value" in city) == (42, "nope", False)
    assert not any(e.get("isRequired") for e in body)
    assert card["actions"][0] == {"type": "Action.Execute", "title": "Submit",
                                  "verb": "hitl_submit", "data": {"request_id": REQUEST_ID},
                                  "style": "positive"}  # fmt: skip
    assert [a["title"] for a in card["actions"]] == ["Submit", "Decline"]
    assert "value" not in inputs(_shown(card, "Decline"))[0]  # another form: left as it was


def test_an_answer_refused_as_a_whole_is_shown_above_the_controls() -> None:
    card = draw("requestApproval", {"action": "a", "reason": "r"}, open=Verb.APPROVE,
                filled=Filled({}, {"": "Not now"}))  # fmt: skip
    assert any(e.get("text") == "⚠️ Not now" for e in card["body"])


@pytest.mark.parametrize(
    ("kind", "entered", "expected"),
    [
        ("number", "4.5", 4.5),
        ("number", "abc", None),  # Input.Number's value must be a number
        ("number", "nan", None),
        ("number", "1e400", None),
        ("choice", "1", "1"),
        ("choice", "7", None),  # not an option
        ("choices", "0,2", "0,2"),
        ("choices", "0,9", None),
        ("boolean", "true", "true"),
        ("boolean", "maybe", "false"),  # the toggle's own value stays
        ("date", "2026-01-02", "2026-01-02"),
        ("date", "tomorrow", None),
        ("time", "14:30", "14:30"),
        ("text", "t" * 3_001, None),  # over the input's maxLength: not cut, left out
    ],
)
def test_values_put_back_must_fit_their_input(kind: str, entered: str, expected: Any) -> None:
    spec = field_of(kind)
    card = draw("collectUserData", {"fields": [spec]}, open=Verb.SUBMIT,
                filled=Filled({f"form.{spec['name']}": entered}))  # fmt: skip
    (element,) = [e for e in card["body"] if e.get("id") == f"form.{spec['name']}"]
    assert element.get("value") == expected


def test_a_fields_own_value_fills_a_fresh_form() -> None:
    tool = HumanTool("editRelease", "d", BaseModel, _release_model())
    form = _shown(draw("editRelease", {}, tool=tool), "Answer")
    by_id = {i["id"]: i.get("value") for i in inputs(form)}
    assert by_id == {"form.when.date": None, "form.when.time": None, "form.count": 3,
                     "form.urgent": "true", "form.colour": "1"}  # fmt: skip


def _release_model() -> type[BaseModel]:
    from typing import Literal

    class Release(BaseModel):
        when: datetime
        count: int = 3
        urgent: bool = True
        colour: Literal["red", "green"] = "green"

    return Release


# -- states ----------------------------------------------------------------------------------------


def test_in_progress_shows_no_arguments() -> None:
    for name, args in [("AskUserQuestion", {"question": "SECRET-PARTIAL"}),
                       ("confirmAction", {"title": "SECRET-PARTIAL", "message": "m"})]:  # fmt: skip
        card = draw(name, args, RenderState.IN_PROGRESS, refresh_user_ids=["29:a"],
                    changes={"pending_id": ""})  # fmt: skip
        assert "Preparing request…" in _text_of(card)
        assert "SECRET-PARTIAL" not in json.dumps(card)
        assert "refresh" not in card and interactive_elements(card) == []


def test_no_actor_means_anyone() -> None:
    card = draw("AskUserQuestion", {"question": "Q"}, changes={"actor_id": None})
    assert "Anyone here can answer." in _text_of(card)


def test_the_id_stands_in_for_an_unknown_name() -> None:
    card = draw("AskUserQuestion", {"question": "Q"}, names={}, changes={"actor_id": "<at>x"})
    assert "\u2039at\u203ax, this is for you." in _text_of(card)


@pytest.mark.parametrize(
    ("name", "arguments", "result", "shown"),
    [
        ("AskUserQuestion", {"question": "Q"}, '{"answer":"eu-west"}', "Answer: eu-west"),
        ("requestApproval", {"action": "a", "reason": "r"}, '{"approved":true}',
         "Decision: Approved"),
        ("selectOption", {"question": "Q", "options": ["x", "y"]},
         '{"selectedIndex":1,"selectedValue":"y"}', "Selected: y"),
        ("collectUserData", {"fields": [field_of("number")]}, '{"number_0":42}', "Number: 42"),
        ("uploadFile", {"purpose": "p"},
         '{"fileName":"a.pdf","fileSize":2048,"url":"https://x.example/a.pdf"}',
         "Link: https://x.example/a.pdf"),
        ("confirmAction", {"title": "t", "message": "m"}, '{"confirmed":false}',
         "Decision: Cancelled"),
        ("custom", {"q": 1}, "plain words", "Answer: plain words"),
    ],
)  # fmt: skip
def test_complete_says_who_when_and_what(
    name: str, arguments: dict[str, Any], result: str, shown: str
) -> None:
    card = draw(name, arguments, RenderState.COMPLETE, names={ANSWERER: "Bob"},
                changes={"result": result})  # fmt: skip
    text = _lines(card)
    assert "✅ Answered by Bob 2026-01-02 03:05 UTC" in text
    assert shown in text


def _lines(card: dict[str, Any]) -> str:
    """The card as a person reads it: a line per TextBlock, `title: value` per fact."""
    lines: list[str] = []
    for element in elements(card):
        if element["type"] == "TextBlock":
            lines.append(element["text"])
        elif element["type"] == "FactSet":
            lines += [f"{f['title']}: {f['value']}" for f in element["facts"]]
    return "\n".join(lines)


@pytest.mark.parametrize("name", [*BUILTIN_TOOLS, "custom"])
def test_a_decline_reads_the_same_on_every_tool(name: str) -> None:
    reason = {"reason": "Not on a Friday"}
    card = draw(name, {}, RenderState.REJECTED, names={ANSWERER: "Bob"}, changes=reason)
    update = make_update(name, {}, RenderState.REJECTED)
    status = build_view(update, BUILTIN_TOOLS.get(name)).status
    assert status.plain == f"Declined by {ANSWERER} 2026-01-02 03:05 UTC"  # every surface's
    text = _lines(card)
    assert "🚫 Declined by Bob 2026-01-02 03:05 UTC" in text
    assert "Reason: Not on a Friday" in text
    assert card["fallbackText"].endswith(": Declined by Bob 2026-01-02 03:05 UTC")


def test_complete_without_a_name_shows_the_answerers_id() -> None:
    card = draw("AskUserQuestion", {"question": "Q"}, RenderState.COMPLETE, names={},
                changes={"result": '{"answer":"a"}'})  # fmt: skip
    assert f"Answered by {ANSWERER}" in _text_of(card)


def test_expired_shows_the_deadline_and_no_actions() -> None:
    card = draw("AskUserQuestion", {"question": "Q"}, RenderState.EXPIRED)
    assert "⌛ Expired 2026-01-02 03:09 UTC: no answer was given in time." in _text_of(card)
    assert "actions" not in card and interactive_elements(card) == []


def test_cancelled_says_withdrawn_and_has_no_actions() -> None:
    card = draw("AskUserQuestion", {"question": "Q"}, RenderState.CANCELLED)
    assert "Withdrawn: no answer is needed any more." in _text_of(card)
    assert "actions" not in card and interactive_elements(card) == []


def test_fallback_text_is_short_and_inert() -> None:
    card = draw("AskUserQuestion", {"question": MARK * 50})
    assert card["fallbackText"].startswith("Question: ")
    assert byte_length(card["fallbackText"]) <= 300


def test_unusable_request_id_is_refused() -> None:
    for bad in ("", " padded ", "x" * 201):
        with pytest.raises(ValueError, match="request id"):
            draw("AskUserQuestion", {"question": "Q"}, changes={"pending_id": bad})


def test_the_formatter_writes_names_and_utc_times() -> None:
    formatter = TeamsFormatter({"a": "Ada *A*"}.get)
    assert formatter.person("a") == "Ada \\*A\\*"
    assert formatter.person("b") == "b"
    assert formatter.moment(CREATED) == "2026-01-02 03:04 UTC"
    assert formatter.moment(CREATED.replace(tzinfo=None)) == "2026-01-02 03:04 UTC"
    assert formatter.text("[x](y)") == "[x]\u2060(y)"


# -- size ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("selectOption", {"question": "😀" * 10_000, "options": ["😀" * 500] * 100}),
        ("collectUserData", {"fields": _wide_choices()}),
        ("AskUserQuestion", {"question": "<" * 10_000}),  # each < becomes a 3-byte character
        ("requestApproval", {"action": "\\" * 10_000, "reason": "*" * 10_000}),  # escapes double
    ],
)
def test_largest_requests_stay_well_under_the_limit(name: str, arguments: dict[str, Any]) -> None:
    users = [f"29:{i:090d}" for i in range(60)]
    for state in RenderState:
        card = draw(name, arguments, state, refresh_user_ids=users, notice=Phrase("e" * 5_000),
                    changes={"result": '{"answer":"a"}'})  # fmt: skip
        assert card_size(card) <= BUDGET, (state, card_size(card))


def test_an_oversized_card_has_its_texts_cut_never_its_structure() -> None:
    # 60 refresh ids of 150 characters leave too little room for the texts' own budgets: the
    # safety net cuts texts further, never a choice's value.
    args = {"question": "😀" * 10_000, "options": ["😀" * 500] * 100}
    roomy = draw("selectOption", args)
    users = [f"29:{i:0150d}" for i in range(60)]
    tight = draw("selectOption", args, refresh_user_ids=users, notice=Phrase("e" * 5_000))
    assert card_size(roomy) + card_size({"userIds": users}) > BUDGET  # it would not fit uncut
    assert card_size(tight) <= BUDGET
    (choice,) = inputs(_shown(tight, "Choose"))
    assert [c["value"] for c in choice["choices"]] == [str(i) for i in range(100)]
    assert len(tight["body"][1]["text"]) < len(roomy["body"][1]["text"])
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
    assert byte_length("\x7f\u2028\ud800") == 1 + 3 + 3  # not escaped; a lone surrogate's 3
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
        (_card(_INPUT, actions=[{"type": "Action.ShowCard", "title": "s",
                                 "card": {"type": "AdaptiveCard", "body": [_INPUT]}}]),
         True, "duplicate input id"),
        (_card(_INPUT), False, "Input.Text on a read-only card"),
        (_card(_TEXT, actions=[_execute()]), False, "interactive Action.Execute"),
        (_card(_TEXT, actions=[_execute(verb=None)]), True, "without a verb"),
        (_card(_TEXT, actions=[_execute(data={"x": 1})]), True, "without data.request_id"),
        (_card({**_TEXT, "color": "bogus-attention"}), True, "color 'bogus-attention'"),
        (_card({"type": "Input.ChoiceSet", "id": "c",
                "choices": [{"title": "a", "value": "1"}] * 2}), True, "duplicate choice values"),
        (_card({"type": "TextBlock", "text": " "}), True, "empty TextBlock"),
        (_card(_TEXT, actions=[_execute()] * 7), True, "7 actions > 6"),
        (_card({**_TEXT, "text": "x" * 28_000}), True, "bytes >= 28000"),
        (_card(_TEXT, refresh={"action": _execute(), "userIds": [str(i) for i in range(61)]}),
         False, "61 ids"),
        (_card(_TEXT, refresh={"action": _execute(data={})}), False, "refresh.action"),
        (_card(_TEXT, version="1.6"), True, "version '1.6'"),
    ],
)  # fmt: skip
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
        # Teams's people picker (`choices.data`) is not in the 1.5 schema: we draw none
        _card({"type": "Input.ChoiceSet", "id": "p", "choices": [],
               "choices.data": {"type": "Data.Query", "dataset": "graph.microsoft.com/users"}}),
    ],
)  # fmt: skip
def test_schema_catches_a_bad_card(card: dict[str, Any]) -> None:
    assert schema_problems(card)


def test_schema_copy_matches_the_conformance_one() -> None:
    shared = conformance_file(f"teams/{SCHEMA.name}")
    if shared is None:
        pytest.skip("no conformance data (HITL_CONFORMANCE_DIR)")
    assert SCHEMA.read_bytes() == shared.read_bytes()


def test_elements_leave_out_the_refresh() -> None:
    card = draw("AskUserQuestion", {"question": "Q"}, refresh_user_ids=["29:a"])
    assert all(e.get("verb") != "hitl_refresh" for e in elements(card))
