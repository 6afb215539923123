"""A policy's escalation ladder end to end in Teams, with short offsets: a reminder step
updates the conversation's card and says so in one message; an approvers step lets someone
refused before answer, the card naming them by name; each step audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.durable.escalations import ESCALATED, REMINDED
from tests.adapters.surfaces.teams.conftest import (
    ALICE,
    BOB,
    CAROL,
    JSON,
    WAIT,
    Chat,
    StartEnv,
    is_live,
    request_id_of,
    text_of,
)
from tests.adapters.surfaces.teams.test_e2e import FINAL, assert_settled_reply, start_turn

pytestmark = pytest.mark.slow  # a reminder's and an escalation's deadlines pass

POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [teams:{BOB.aad}]
    timeout_seconds: 30
    escalate:
      - {{after_seconds: 0.3, remind: true}}
      - {{after_seconds: 3, approvers: [teams:{CAROL.aad}]}}
  - match: {{tool: "*"}}
    approvers: [actor]
"""


async def card_saying(chat: Chat, activity_id: str, words: str) -> JSON:
    """The conversation's card once an update says `words`, still refreshing (open)."""

    def updated() -> JSON:
        card = chat.card(activity_id)
        return card if words in text_of(card) and card.get("refresh") else {}

    return await chat.env.connector.wait_for(updated, WAIT)


async def texts(chat: Chat, count: int) -> list[str]:
    await chat.env.connector.wait_for(lambda: len(chat.texts()) >= count, WAIT)
    return chat.texts()


async def test_a_reminder_then_an_added_approver_answers(
    start_env: StartEnv, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    deploy = {"action": "Deploy v2", "reason": "Release day"}
    whom = f"Asked by {ALICE.name}. Approvers: {BOB.aad}. Expires "  # Bob's name not known yet
    chat, activity_id, card = await start_turn(env, "requestApproval", deploy, whom=whom)
    request_id = request_id_of(card)

    await card_saying(chat, activity_id, "Reminder: waiting 0.3 s for an answer.")
    (reminder,) = await texts(chat, 1)
    assert reminder == f"Reminder: {BOB.aad}: this request has waited 0.3 s for an answer."

    refused = (await chat.invoke("hitl_approve", request_id, user=CAROL)).card
    assert "may answer this request" in text_of(refused) and not is_live(refused)
    escalated = await card_saying(chat, activity_id, f"Escalated after 3 s to {CAROL.name}.")
    assert f"Approvers: {BOB.aad}, {CAROL.name}." in text_of(escalated)
    assert (await texts(chat, 2))[1] == (
        f"Escalated after 3 s: {CAROL.name} may now answer this request."
    )

    live = (await chat.invoke("hitl_refresh", request_id, user=CAROL)).card
    assert is_live(live) and "Reminder: waiting 0.3 s for an answer." in text_of(live)
    answered = f"Answered by {CAROL.name}"
    assert_settled_reply(await chat.invoke("hitl_approve", request_id, user=CAROL), answered)
    await chat.settled(activity_id, answered)
    assert await texts(chat, 3) == [reminder, chat.texts()[1], FINAL]  # one message a step
    assert json.loads(env.tool_result(2)["content"]) == {"approved": True}
    audit = await env.store.list_audit(request_id=request_id)
    steps = [(e.action, e.detail["step"]) for e in reversed(audit) if e.action in (
        REMINDED, ESCALATED)]  # fmt: skip
    assert steps == [(REMINDED, 0), (ESCALATED, 1)]
    assert [e.actor_id for e in audit if e.action == "answer_refused"] == [CAROL.aad]
