"""Every built-in tool in every state, drawn by Slack, Teams and the console from the core's one
view: each surface shows the same facts (what was asked, who, when, the outcome) in the same
words. Only names and dates look native (a Slack mention, a UTC time on a card)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from adapters.surfaces.console.render import draw as console_draw
from adapters.surfaces.console.render import menu
from adapters.surfaces.slack.messages import render_message
from adapters.surfaces.teams.cards import Drawing, render_card
from bot import BUILTIN_TOOLS, RenderState, RequestUpdate
from bot.policies import Escalation, Match, Rule, parse_principal
from bot.policies.escalation import audience
from bot.policies.tally import Tally
from bot.requests.view import RequestView, build_view
from bot.words.phrases import Phrase, PlainFormatter

pytestmark = pytest.mark.fast  # pure functions: in `make check`

ACTOR, DECIDER = "U0ACTOR01", "U0DECIDE1"
CREATED = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
SETTLED = CREATED + timedelta(minutes=3)
EXPIRES = CREATED + timedelta(minutes=5)

CASES: dict[str, tuple[dict[str, Any], str]] = {
    "AskUserQuestion": ({"question": "Which region first"}, '{"answer": "Frankfurt"}'),
    "requestApproval": (
        {"action": "Deploy version two", "reason": "Release day"},
        '{"approved": true}',
    ),
    "selectOption": (
        {"question": "Which colour", "options": ["Red", "Green", "Blue"]},
        '{"selectedIndex": 1, "selectedValue": "Green"}',
    ),
    "collectUserData": (
        {
            "fields": [
                {"name": "city", "label": "City"},
                {"name": "age", "label": "Age", "type": "integer"},
            ]
        },
        '{"city": "Lyon", "age": 41}',
    ),
    "uploadFile": (
        {"purpose": "The signed contract", "acceptedTypes": ["pdf"]},
        '{"fileName": "contract.pdf", "fileSize": 1200, "url": "https://files.example/c.pdf"}',
    ),
    "confirmAction": (
        {
            "title": "Drop the staging table",
            "message": "It cannot be restored",
            "severity": "danger",
        },
        '{"confirmed": true}',
    ),
}


def _update(tool: str, state: RenderState) -> RequestUpdate:
    arguments, answer = CASES[tool]
    settled = state in (RenderState.COMPLETE, RenderState.REJECTED)
    return RequestUpdate(
        state=state,
        pending_id="0123456789abcdef01234567",
        tool_name=tool,
        arguments=arguments,
        room_id="slack:C1:1.0",
        tool_call_id="toolu_1",
        channel_id="agent",
        channel_type="ai",
        actor_id=ACTOR,
        created_at=CREATED,
        expires_at=EXPIRES,
        result=answer if state is RenderState.COMPLETE else None,
        reason="Not today" if state is RenderState.REJECTED else None,
        settled_by=DECIDER if settled else None,
        settled_at=SETTLED if settled else None,
    )


def strings(node: Any) -> Iterator[str]:
    """Every string in a drawn message or card (the other view tests read them too)."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from strings(item)


def _shown(tool: str, update: RequestUpdate) -> dict[str, str]:
    """What each surface shows, as one text."""
    slack = render_message(update, BUILTIN_TOOLS[tool])
    card = render_card(update, BUILTIN_TOOLS[tool], live=True, drawing=Drawing())
    view = build_view(update, BUILTIN_TOOLS[tool])
    console = console_draw(view) + "\n" + menu(view.controls)  # the menu asks for the answer
    shown = {
        "slack": "\n".join(strings(slack.blocks)),
        "teams": "\n".join(strings(card)).replace("\u2060", ""),  # Teams' inert joiners
        "console": console,
    }
    return {surface: _flat(text) for surface, text in shown.items()}


def _flat(text: str) -> str:
    """Lines folded into one: the console keeps model text on one line."""
    return " ".join(text.split())


def _words(phrase: Phrase) -> list[str]:
    """The phrase's own words and its people and moments as plain text would show them."""
    parts = [part.strip() for part in phrase.template.replace("}", "{").split("{")]
    words = [p for p in parts if p and p not in phrase.people and p not in phrase.moments]
    fmt = PlainFormatter()
    return [
        *words,
        *phrase.people.values(),
        *(fmt.moment(at) for at in phrase.moments.values()),
    ]


def _expected(view: RequestView) -> list[str]:
    shown = [view.title, *_words(view.status)]
    shown += [f.value for f in view.outcome] + [f.label for f in view.outcome if f.label]
    if view.state is RenderState.EXECUTING:
        shown += [f.value for f in view.facts] + [c.label for c in view.controls]
    return shown


@pytest.mark.parametrize("state", list(RenderState), ids=str)
@pytest.mark.parametrize("tool", list(CASES))
def test_every_surface_shows_the_same_facts_in_the_same_words(
    tool: str, state: RenderState
) -> None:
    update = _update(tool, state)
    view = build_view(update, BUILTIN_TOOLS[tool])
    expected = _expected(view)
    assert expected, "the view shows something"
    for surface, text in _shown(tool, update).items():
        missing = [words for words in expected if _flat(words) not in text]
        assert not missing, f"{surface} does not show {missing} for {tool} {state}:\n{text}"


def test_a_declined_request_reads_the_same_everywhere() -> None:
    update = _update("requestApproval", RenderState.REJECTED)
    shown = _shown("requestApproval", update)
    for surface, text in shown.items():
        assert "Declined by" in text, surface
        assert "Not today" in text, surface
        assert "Rejected" not in text, surface
    assert json.loads(CASES["requestApproval"][1]) == {"approved": True}


def test_who_may_answer_and_the_escalation_read_the_same_everywhere() -> None:
    """Under a policy rule naming people, every surface's status line names them, what the
    escalation did so far, and the votes, in the same words (a Slack user group mentioned)."""
    rule = Rule(
        match=Match(tool="requestApproval"),
        approvers=(parse_principal(f"slack:{DECIDER}"), parse_principal("slack:S0OPSTEAM")),
        escalate=(
            Escalation(after_seconds=900, remind=True),
            Escalation(after_seconds=1800, approvers=(parse_principal("slack:U0CAROL01"),)),
        ),
    )
    update = dataclasses.replace(
        _update("requestApproval", RenderState.EXECUTING),
        audience=audience(rule, 2),
        tally=Tally(approvers=(DECIDER,), decliners=(), required=2),
    )
    view = build_view(update, BUILTIN_TOOLS["requestApproval"])
    assert view.status.plain == (
        f"Asked by {ACTOR}. Approvers: {DECIDER}, slack:S0OPSTEAM, U0CAROL01. Expires "
        "2026-12-01 09:05 UTC. Escalated after 30 min to U0CAROL01. Reminder: waiting 15 min "
        f"for an answer. 1 of 2 approvals: {DECIDER}."
    )
    shown = _shown("requestApproval", update)
    for surface, text in shown.items():
        for words in ("Approvers:", "Escalated after 30 min to", "U0CAROL01",
                      "Reminder: waiting 15 min for an answer.", "1 of 2 approvals:"):  # fmt: skip
            assert words in text, (surface, words, text)
    assert "<!subteam^S0OPSTEAM>" in shown["slack"]
    assert "slack:S0OPSTEAM" in shown["teams"] and "slack:S0OPSTEAM" in shown["console"]
