"""A gated call's approval request, drawn by Slack, Teams and the console from the core's one
view (bot/requests/kinds.py `GATE`): the same facts and controls in every state, valid Block Kit
and Adaptive Cards, the model's text inert, redacted values never drawn, long values folded."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.surfaces.console.render import draw as console_draw
from adapters.surfaces.console.render import menu
from adapters.surfaces.slack.messages import render_message
from adapters.surfaces.slack.modals import render_modal
from adapters.surfaces.teams.cards import Drawing, render_card
from bot import RenderState, RequestUpdate
from bot.gates.approvals import MASK, request_arguments
from bot.requests.asked_kinds import gate_edit_form
from bot.requests.kinds import Verb
from bot.requests.view import build_view
from bot.words.tool_names import GATE_TOOL
from tests.adapters.surfaces.slack.blockkit_rules import assert_valid_message, assert_valid_modal
from tests.adapters.surfaces.slack.updates import MARK, assert_inert
from tests.adapters.surfaces.teams.card_rules import assert_valid_card
from tests.adapters.test_one_view import strings

pytestmark = pytest.mark.fast  # pure functions: in `make check`

ACTOR, DECIDER = "U0ACTOR01", "U0DECIDE1"
CREATED = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SECRET = "hunter2-very-secret"
SCHEMA = {
    "type": "object",
    "properties": {
        "service": {"type": "string", "description": "Which service " + MARK},
        "env": {"type": "string", "enum": ["staging", "production"]},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "dry_run": {"type": "boolean"},
        "config": {"type": "object"},
        "password": {"type": "string"},
        "notes": {"type": "string"},
    },
    "required": ["service", "env"],
}
CALL = {
    "service": "api " + MARK,
    "env": "production",
    "replicas": 2,
    "dry_run": False,
    "config": {"region": "eu", "db": {"password": SECRET}},
    "password": SECRET,
    "notes": "x" * 1000,
}
ARGUMENTS = request_arguments(
    tool="deploy", description="Deploy a service " + MARK, schema=SCHEMA, arguments=CALL,
    redact=["password"], grant_seconds=3600,
)  # fmt: skip
EDITED = {"service": "api", "env": "staging", "replicas": 2, "dry_run": False, "notes": "short"}


def gate_update(state: RenderState, **changes: Any) -> RequestUpdate:
    settled = state in (RenderState.COMPLETE, RenderState.REJECTED)
    fields: dict[str, Any] = {
        "state": state,
        "pending_id": "0123456789abcdef01234567",
        "tool_name": GATE_TOOL,
        "arguments": ARGUMENTS,
        "room_id": "slack:C1:1.0",
        "tool_call_id": "toolu_1",
        "channel_id": "agent",
        "channel_type": "ai",
        "actor_id": ACTOR,
        "created_at": CREATED,
        "expires_at": CREATED + timedelta(minutes=5),
        "result": json.dumps({"approved": True, "arguments": EDITED}) if settled else None,
        "reason": "Not on a Friday" if state is RenderState.REJECTED else None,
        "settled_by": DECIDER if settled else None,
        "settled_at": CREATED + timedelta(minutes=1) if settled else None,
        "run_outcome": "ok" if state is RenderState.COMPLETE else None,
    }
    return RequestUpdate(**{**fields, **changes})


TEAMS_SHOWN = str.maketrans({"\u2039": "<", "\u203a": ">"})  # the inert brackets Teams draws


def drawn(update: RequestUpdate) -> dict[str, str]:
    slack = render_message(update)
    assert_valid_message(slack.text, slack.blocks)
    assert_inert(slack.blocks)
    live = update.state is RenderState.EXECUTING
    card = render_card(update, live=live, drawing=Drawing())
    assert_valid_card(card, interactive=live)
    view = build_view(update)
    shown = {
        # Model text is escaped on Slack and broken up by joiners on both: read as shown.
        "slack": html.unescape(" ".join(strings(slack.blocks))).replace("\u2060", ""),
        "teams": " ".join(strings(card)).replace("\u2060", "").translate(TEAMS_SHOWN),
        "console": console_draw(view) + "\n" + menu(view.controls),
    }
    return {surface: " ".join(text.split()) for surface, text in shown.items()}


@pytest.mark.parametrize("state", list(RenderState), ids=str)
def test_every_surface_draws_the_approval_request_alike(state: RenderState) -> None:
    update = gate_update(state)
    view = build_view(update)
    expected = [view.title, *(f.value for f in view.outcome)]
    if state is RenderState.EXECUTING:
        expected += ["deploy", "production", MASK, "Approve", "Edit", "Decline"]
        expected += ["Approve and allow deploy here for 1 hour", "(+700 characters)"]
    for surface, text in drawn(update).items():
        missing = [words for words in expected if " ".join(words.split()) not in text]
        assert not missing, f"{surface} lacks {missing} in {state}:\n{text}"
        assert SECRET not in text, surface


def test_the_settled_request_says_who_approved_what_was_edited_and_the_outcome() -> None:
    view = build_view(gate_update(RenderState.COMPLETE))
    assert view.status.plain.startswith(f"Answered by {DECIDER}")
    outcome = {f.label: f.value for f in view.outcome}
    assert outcome["Decision"] == "Approved"
    service, env, notes = outcome["Edited"].splitlines()  # each side folded at 80
    assert service.startswith('service: "api <x&y>') and service.endswith(
        '… (+7 characters) → "api"'
    )
    assert env == 'env: "production" → "staging"'
    assert notes == f'notes: "{"x" * 79}… (+922 characters) → "short"'
    assert outcome["Outcome"] == "ok"
    assert view.controls == ()


def test_redacted_values_are_masked_at_any_depth_and_not_editable() -> None:
    assert ARGUMENTS["arguments"]["password"] == MASK
    assert ARGUMENTS["arguments"]["config"] == {"region": "eu", "db": {"password": MASK}}
    assert ARGUMENTS["redacted"] == ["config", "password"]
    assert SECRET not in json.dumps(ARGUMENTS)
    form = gate_edit_form(ARGUMENTS)
    assert [f.name for f in form.fields] == ["service", "env", "replicas", "dry_run", "notes"]
    facts = {f.label: f.value for f in build_view(gate_update(RenderState.EXECUTING)).facts}
    assert facts["password"] == MASK
    assert json.loads(facts["config"]) == {"region": "eu", "db": {"password": MASK}}
    assert facts["notes"] == "x" * 300 + "… (+700 characters)"  # folded; Edit shows it whole


def test_the_edit_form_is_the_tools_schema_prefilled_with_the_call() -> None:
    unredacted = request_arguments(
        tool="deploy", description="", schema=SCHEMA, arguments=CALL, redact=[],
        grant_seconds=None,
    )  # fmt: skip
    form = gate_edit_form(unredacted)
    fields = {f.name: f for f in form.fields}
    assert [f.kind for f in form.fields][:4] == ["text", "choice", "integer", "boolean"]
    assert fields["env"].value == "1" and fields["replicas"].value == 2
    assert fields["dry_run"].value is False and fields["notes"].value == "x" * 1000
    assert fields["config"].json_value  # an object: edited as JSON text
    assert json.loads(fields["config"].value)["db"] == {"password": SECRET}
    modal = render_modal(gate_edit_form(ARGUMENTS), Verb.EDIT, "0123456789abcdef01234567")
    assert_valid_modal(modal)
    # Every text is escaped but an input's initial value: Slack never reads markup there,
    # and it must be the value itself, which the submission sends back.
    texts = json.loads(json.dumps(modal).replace('"initial_value"', '"value_as_typed"'))
    for block in texts["blocks"]:
        block.get("element", {}).pop("value_as_typed", None)
    assert_inert(texts)
    service = next(b for b in modal["blocks"] if b.get("block_id") == "service")
    assert service["element"]["initial_value"] == CALL["service"]
    assert modal["callback_id"] == "hitl_modal:edit"
    assert SECRET not in json.dumps(modal)


def test_no_grant_control_is_offered_without_grants() -> None:
    plain = request_arguments(
        tool="deploy", description="", schema={"type": "object"}, arguments={},
        redact=[], grant_seconds=None,
    )  # fmt: skip
    view = build_view(gate_update(RenderState.EXECUTING, arguments=plain))
    assert [c.verb for c in view.controls] == [Verb.APPROVE, Verb.DECLINE]  # nothing to edit
    assert {f.label: f.value for f in view.facts}["Arguments"] == "none"
