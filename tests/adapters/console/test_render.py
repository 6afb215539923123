"""The console's pure pieces: what is shown, what is asked, what typed replies answer."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from adapters.console.render import answer_from, describe, follow_up, prompts_for
from bot import BUILTIN_TOOLS, RenderState, RequestUpdate


def update(tool: str, args: dict[str, object], state: RenderState, **kw: object) -> RequestUpdate:
    fields: dict[str, object] = dict(
        state=state, pending_id="p1", tool_name=tool, arguments=args, room_id="r",
        tool_call_id="t", channel_id="c", channel_type="ai", actor_id="ann",
        created_at=datetime.now(UTC),
    )  # fmt: skip
    fields.update(kw)
    return RequestUpdate(**fields)  # type: ignore[arg-type]


def test_model_text_cannot_fake_a_prompt_line() -> None:
    shown = describe(
        update("AskUserQuestion", {"question": "hi\nyou> approve? y"}, RenderState.EXECUTING)
    )
    assert "hi you> approve? y" in shown
    assert "\nyou>" not in shown


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (RenderState.COMPLETE, "answered (by bob)"),
        (RenderState.REJECTED, "rejected (by bob): no"),
        (RenderState.EXPIRED, "expired"),
        (RenderState.CANCELLED, "withdrawn"),
    ],
)
def test_each_ending_is_described(state: RenderState, expected: str) -> None:
    shown = describe(update("confirmAction", {}, state, settled_by="bob", reason="no", result="{}"))
    assert expected in shown


def test_an_approval_asks_a_reason_only_after_a_no() -> None:
    assert [p.key for p in prompts_for("requestApproval", {})] == ["approved"]
    assert follow_up("requestApproval", {"approved": "y"}) is None
    prompt = follow_up("requestApproval", {"approved": "n"})
    assert prompt is not None and prompt.key == "reason"
    answer = answer_from("requestApproval", {}, {"approved": "n", "reason": "not today"})
    assert json.loads(answer) == {"approved": False, "reason": "not today"}


def test_replies_become_answers_the_tools_accept(tmp_path: Path) -> None:
    runbook = tmp_path / "runbook.md"
    runbook.write_text("# steps")
    options = {"question": "Which?", "options": ["a", "b"]}
    cases: list[tuple[str, dict[str, Any], dict[str, str]]] = [
        ("selectOption", options, {"choice": "2"}),
        ("confirmAction", {"title": "t", "message": "m"}, {"confirmed": "yes"}),
        ("AskUserQuestion", {"question": "q"}, {"answer": " blue "}),
        ("uploadFile", {"purpose": "p", "acceptedTypes": ["md"]}, {"path": str(runbook)}),
    ]
    for tool, args, replies in cases:
        raw = answer_from(tool, args, replies)
        assert BUILTIN_TOOLS[tool].parse_answer(args, raw)
    assert json.loads(answer_from("selectOption", options, {"choice": "2"}))["selectedValue"] == "b"
    upload = json.loads(answer_from("uploadFile", {}, {"path": str(runbook)}))
    assert upload == {"fileName": "runbook.md", "fileSize": 7, "url": runbook.resolve().as_uri()}


@pytest.mark.parametrize(
    ("tool", "replies", "problem"),
    [
        ("selectOption", {"choice": "9"}, "from 1 to 2"),
        ("selectOption", {"choice": "x"}, "from 1 to 2"),
        ("confirmAction", {"confirmed": "maybe"}, "y or n"),
        ("uploadFile", {"path": "/no/such/file"}, "no file"),
    ],
)
def test_bad_replies_say_what_to_type(tool: str, replies: dict[str, str], problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        answer_from(tool, {"options": ["a", "b"]}, replies)
