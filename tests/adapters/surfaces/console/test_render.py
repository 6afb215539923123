"""The console's pure pieces: how a request's view is laid out, and what typed lines give."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from adapters.ops.terminal import one_line
from adapters.surfaces.console.render import (
    agent_lines,
    answering,
    draw,
    field_errors,
    field_input,
    field_prompt,
    menu,
    pick,
    rejection,
)
from bot import BUILTIN_TOOLS, RenderState, RequestUpdate
from bot.human_tools.forms import FieldKind, FormField, numbered_options
from bot.requests.kinds import Verb
from bot.requests.view import RequestView, build_view

pytestmark = pytest.mark.fast  # pure functions: in `make check`

AT = datetime(2025, 3, 1, 9, 30, tzinfo=UTC)


def update(tool: str, args: dict[str, Any], state: RenderState, **kw: object) -> RequestUpdate:
    fields: dict[str, object] = dict(
        state=state, pending_id="p1", tool_name=tool, arguments=args, room_id="r",
        tool_call_id="t", channel_id="c", channel_type="ai", actor_id="ann",
        created_at=AT,
    )  # fmt: skip
    fields.update(kw)
    return RequestUpdate(**fields)  # type: ignore[arg-type]


def view(tool: str, args: dict[str, Any], state: RenderState, **kw: object) -> RequestView:
    return build_view(update(tool, args, state, **kw), BUILTIN_TOOLS.get(tool))


def test_model_text_cannot_fake_a_prompt_line_or_drive_the_terminal() -> None:
    question = "hi\nyou> approve? y\x1b[2J\u202egnp.exe\r\x07"
    shown = draw(view("AskUserQuestion", {"question": question}, RenderState.EXECUTING))
    assert "hi you> approve? y\\x1b[2J\\u202egnp.exe \\x07" in shown
    assert "\nyou>" not in shown
    assert not any(c in shown for c in "\x1b\u202e\r\x07")
    title = "Drop\u2028it\u2066now\x85"
    assert one_line(title) == "Drop it\\u2066now"
    assert agent_lines("done\n\x1b[Hyou> ") == "agent> done\n       \\x1b[Hyou>"


def test_a_waiting_request_shows_its_title_facts_and_whom_it_is_for() -> None:
    args = {"action": "Deploy v2", "reason": "green on staging"}
    shown = draw(view("requestApproval", args, RenderState.EXECUTING, expires_at=AT))
    assert shown.splitlines() == [
        "▶ Approval needed",
        "  Action: Deploy v2",
        "  Reason: green on staging",
        "  ann, this is for you. Expires 2025-03-01 09:30 UTC.",
    ]
    danger = {"title": "Drop it", "message": "Gone for good.", "severity": "danger"}
    assert draw(view("confirmAction", danger, RenderState.EXECUTING)).startswith(
        "▶ [DANGER] Drop it\n  Gone for good."
    )


@pytest.mark.parametrize(
    ("state", "kw", "expected"),
    [
        (RenderState.IN_PROGRESS, {}, ["… Question — Preparing request…"]),
        (
            RenderState.COMPLETE,
            {"result": '{"answer": "blue"}', "settled_by": "bob", "settled_at": AT},
            ["✓ Question — Answered by bob 2025-03-01 09:30 UTC", "  Answer: blue"],
        ),
        (
            RenderState.REJECTED,
            {"reason": "not\nmine", "settled_by": "bob"},
            ["✗ Question — Declined by bob", "  Reason: not mine"],
        ),
        (
            RenderState.EXPIRED,
            {"expires_at": AT},
            ["⌛ Question — Expired 2025-03-01 09:30 UTC: no answer was given in time."],
        ),
        (RenderState.CANCELLED, {}, ["- Question — Withdrawn: no answer is needed any more."]),
    ],
)
def test_each_ending_is_the_views_status_and_outcome(
    state: RenderState, kw: dict[str, object], expected: list[str]
) -> None:
    shown = draw(view("AskUserQuestion", {"question": "Colour?"}, state, **kw))
    assert shown.splitlines() == expected


def test_the_controls_are_a_numbered_menu_picked_by_number_or_label() -> None:
    args = {"title": "t", "message": "m"}
    controls = view("confirmAction", args, RenderState.EXECUTING).controls
    assert menu(controls) == "  1) Confirm  2) Cancel  3) Decline"
    assert [c.verb for c in answering(controls)] == [Verb.CONFIRM, Verb.CANCEL]
    assert pick(controls, " 2 ").verb is Verb.CANCEL
    assert pick(controls, "decline").verb is Verb.DECLINE
    for wrong in ("0", "4", "maybe"):
        with pytest.raises(ValueError, match="from 1 to 3"):
            pick(controls, wrong)


def test_reject_is_recognised_at_any_prompt() -> None:
    assert rejection("/reject not today ") == "not today"
    assert rejection("  /reject") == ""
    assert rejection("/rejected") is None
    assert rejection("reject it") is None


OPTIONS = numbered_options(["red", "green", "blue"])


@pytest.mark.parametrize(
    ("spec", "prompt"),
    [
        (FormField("a", "Name"), "  Name"),
        (FormField("a", "Notes", FieldKind.LONG_TEXT, required=False), "  Notes (Enter to skip)"),
        (FormField("a", "N", FieldKind.NUMBER, minimum=1, maximum=5), "  N (a number; 1 to 5)"),
        (FormField("a", "N", FieldKind.INTEGER, minimum=0), "  N (a whole number; at least 0)"),
        (FormField("a", "Mail", FieldKind.EMAIL), "  Mail (an email address)"),
        (FormField("a", "Site", FieldKind.URL), "  Site (https://…)"),
        (FormField("a", "Who", FieldKind.USER), "  Who (a user id)"),
        (FormField("a", "Day", FieldKind.DATE), "  Day (YYYY-MM-DD)"),
        (FormField("a", "At", FieldKind.TIME), "  At (HH:MM)"),
        (
            FormField("a", "When", FieldKind.DATETIME),
            "  When (YYYY-MM-DD HH:MM, UTC unless an offset is given)",
        ),
        (FormField("a", "Ok", FieldKind.BOOLEAN, value=True), "  Ok (y/n; Enter for True)"),
        (FormField("a", "One", FieldKind.CHOICE, options=OPTIONS), "  One (1-3)"),
        (
            FormField("a", "Some", FieldKind.CHOICES, options=OPTIONS, value=["0", "2"]),
            "  Some (numbers, comma-separated; Enter for 1. red, 3. blue)",
        ),
        (
            FormField("a", "Doc", FieldKind.FILE, accept=("pdf", "md")),
            "  Doc (the path of a file; accepted: pdf, md)",
        ),
        (FormField("a", "Raw", FieldKind.LONG_TEXT, json_value=True), "  Raw (JSON)"),
    ],
)
def test_each_kind_of_field_has_its_prompt(spec: FormField, prompt: str) -> None:
    assert field_prompt(spec).prompt == prompt


def test_a_choice_lists_its_options_and_is_typed_by_number() -> None:
    one = FormField("a", "Colour\nyou>", FieldKind.CHOICE, description="Pick\x1b", options=OPTIONS)
    asked = field_prompt(one)
    assert asked.before == ["    Pick\\x1b", "    1. red", "    2. green", "    3. blue"]
    assert asked.prompt == "  Colour you> (1-3)"
    assert field_input(one, " 2 ") == "1"
    some = FormField("a", "Colours", FieldKind.CHOICES, options=OPTIONS)
    assert field_input(some, "3, 1,") == ["2", "0"]
    for wrong in ("0", "4", "green"):
        with pytest.raises(ValueError, match="from 1 to 3"):
            field_input(one, wrong)
    with pytest.raises(ValueError, match="from 1 to 3"):
        field_input(some, "1, 9")


def test_other_fields_pass_the_typed_line_to_the_core() -> None:
    assert field_input(FormField("a", "N", FieldKind.NUMBER), " 3 ") == "3"
    assert field_input(FormField("a", "Ok", FieldKind.BOOLEAN), "y") == "y"
    assert field_input(FormField("a", "N", FieldKind.TEXT, required=False), "  ") == ""
    assert field_input(FormField("a", "N", FieldKind.TEXT, value="kept"), "") == "kept"


def test_errors_are_shown_by_the_fields_label() -> None:
    fields = [FormField("n", "Count\n>"), FormField("m", "Mail")]
    errors = {"n": "Enter a number", "": "Something\x1b"}
    assert field_errors(fields, errors) == ["  ! Count >: Enter a number", "  ! Something\\x1b"]
