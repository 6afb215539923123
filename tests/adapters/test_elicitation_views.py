"""An MCP server's elicitation (bot/requests/kinds.py `ELICIT`), drawn by Slack, Teams and the
console from the core's one view: the server's message, a form from its schema (or a link with
a consent line and Done), valid Block Kit, modals and Adaptive Cards in every state."""

from __future__ import annotations

import html
import json
import re
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.surfaces.console.render import draw as console_draw
from adapters.surfaces.console.render import menu
from adapters.surfaces.slack.messages import render_message
from adapters.surfaces.slack.modals import render_modal
from adapters.surfaces.teams.cards import Drawing, render_card
from bot import RenderState, RequestUpdate
from bot.human_tools.elicitation import ElicitInputArgs
from bot.human_tools.forms import FieldKind
from bot.requests.kinds import Verb
from bot.requests.view import build_view
from bot.words.tool_names import ELICIT_INPUT
from tests.adapters.surfaces.slack.blockkit_rules import assert_valid_message, assert_valid_modal
from tests.adapters.surfaces.teams.card_rules import assert_valid_card
from tests.adapters.test_one_view import strings

pytestmark = pytest.mark.fast  # pure functions: in `make check`

CREATED = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Release name", "maxLength": 50},
        "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
        "ratio": {"type": "number"},
        "region": {"type": "string", "enum": ["eu", "us"]},
        "tier": {
            "type": "string",
            "oneOf": [{"const": "gold", "title": "Gold (24/7)"}, {"const": "std", "title": "Std"}],
        },
        "zones": {"type": "array", "items": {"type": "string", "enum": ["a", "b", "c"]}},
        "starts": {"type": "string", "format": "date"},
        "contact": {"type": "string", "format": "email"},
        "urgent": {"type": "boolean", "default": False},
    },
    "required": ["name", "replicas", "region"],
}
FORM = ElicitInputArgs(
    message="Details for the release of payments-api?", requested_schema=SCHEMA,
    server="python ops_server.py", tool="deploy",
).model_dump(exclude_none=True)  # fmt: skip
URL = ElicitInputArgs(
    message="Sign in to the deploy system", mode="url",
    url="https://auth.example.com/login?state=abc", server="ops", tool="deploy",
).model_dump(exclude_none=True)  # fmt: skip
ANSWER = {"name": "Aurora", "replicas": 3, "region": "us", "tier": "gold", "zones": ["a", "c"]}


def update(state: RenderState, arguments: dict[str, Any], result: str) -> RequestUpdate:
    settled = state in (RenderState.COMPLETE, RenderState.REJECTED)
    return RequestUpdate(
        state=state, pending_id="0123456789abcdef01234567", tool_name=ELICIT_INPUT,
        arguments=arguments, room_id="slack:C1:1.0", tool_call_id="toolu_1/elicit-1",
        channel_id="agent", channel_type="ai", actor_id="U0ACTOR01", created_at=CREATED,
        expires_at=CREATED + timedelta(minutes=5),
        result=result if state is RenderState.COMPLETE else None,
        reason="Not now" if state is RenderState.REJECTED else None,
        settled_by="U0ACTOR01" if settled else None,
        settled_at=CREATED + timedelta(minutes=1) if settled else None,
    )  # fmt: skip


def drawn(request: RequestUpdate) -> dict[str, str]:
    slack = render_message(request)
    assert_valid_message(slack.text, slack.blocks)
    live = request.state is RenderState.EXECUTING
    card = render_card(request, live=live, drawing=Drawing())
    assert_valid_card(card, interactive=live)
    view = build_view(request)
    shown = {
        "slack": html.unescape(" ".join(strings(slack.blocks))).replace("\u2060", ""),
        # Teams' markdown escapes (ops\\_server.py) read as shown
        "teams": re.sub(r"\\(.)", r"\1", " ".join(strings(card)).replace("\u2060", "")),
        "console": console_draw(view) + "\n" + menu(view.controls),
    }
    return {surface: " ".join(text.split()) for surface, text in shown.items()}


CASES = {"form": (FORM, json.dumps(ANSWER)), "url": (URL, "{}")}


@pytest.mark.parametrize("state", list(RenderState), ids=str)
@pytest.mark.parametrize("mode", list(CASES))
def test_every_surface_draws_the_elicitation_alike(mode: str, state: RenderState) -> None:
    arguments, result = CASES[mode]
    request = update(state, arguments, result)
    view = build_view(request)
    expected = [view.title, *(f.value for f in view.outcome)]
    if state is RenderState.EXECUTING:
        expected += [f.value for f in view.facts] + [c.label for c in view.controls]
    for surface, text in drawn(request).items():
        missing = [words for words in expected if " ".join(words.split()) not in text]
        assert not missing, f"{surface} lacks {missing} in {mode} {state}:\n{text}"


def test_the_form_is_the_server_s_schema() -> None:
    view = build_view(update(RenderState.EXECUTING, FORM, ""))
    assert view.title == "Input needed"
    assert [c.verb for c in view.controls] == [Verb.SUBMIT, Verb.DECLINE]
    form = view.controls[0].form
    assert form is not None
    fields = {f.name: f for f in form.fields}
    kinds = [f.kind for f in form.fields]
    assert kinds == [
        FieldKind.TEXT, FieldKind.INTEGER, FieldKind.NUMBER, FieldKind.CHOICE, FieldKind.CHOICE,
        FieldKind.CHOICES, FieldKind.DATE, FieldKind.EMAIL, FieldKind.BOOLEAN,
    ]  # fmt: skip
    assert fields["name"].label == "Release name" and fields["name"].max_length == 50
    assert (fields["replicas"].minimum, fields["replicas"].maximum) == (1, 10)
    assert [o.label for o in fields["tier"].options] == ["1. Gold (24/7)", "2. Std"]
    assert [o.text for o in fields["tier"].options] == ["gold", "std"]  # what the answer holds
    assert [f.name for f in form.fields if f.required] == ["name", "replicas", "region"]
    modal = render_modal(form, Verb.SUBMIT, "0123456789abcdef01234567")
    assert_valid_modal(modal)


def test_the_answer_is_shown_with_the_form_s_labels() -> None:
    view = build_view(update(RenderState.COMPLETE, FORM, json.dumps(ANSWER)))
    outcome = {f.label: f.value for f in view.outcome}
    assert outcome["Release name"] == "Aurora" and outcome["zones"] == '["a", "c"]'


def test_a_url_elicitation_shows_where_the_link_leads_and_done() -> None:
    view = build_view(update(RenderState.EXECUTING, URL, "{}"))
    assert view.title == "Open a link"
    facts = [(f.label, f.value) for f in view.facts]
    assert ("Link", "https://auth.example.com/login?state=abc") in facts
    assert ("Asked by", "deploy (ops)") in facts
    assert any(v.startswith("The link opens auth.example.com, outside this chat") for _, v in facts)
    assert [(c.verb, c.label) for c in view.controls] == [
        (Verb.CONFIRM, "Done"), (Verb.DECLINE, "Decline"),
    ]  # fmt: skip
    done = build_view(update(RenderState.COMPLETE, URL, "{}"))
    assert [(f.label, f.value) for f in done.outcome] == [("Decision", "Done")]
