"""A policy's escalation ladder end to end in Slack, with short offsets: a reminder step edits
the request's message and says so in one thread reply naming who has not answered; an
approvers step lets someone refused before answer, the message naming them; each audited."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.durable.escalations import ESCALATED, REMINDED
from tests.adapters.surfaces.slack.conftest import (
    ALICE,
    CHANNEL,
    JSON,
    WAIT,
    Env,
    StartEnv,
    has_actions,
)
from tests.adapters.surfaces.slack.test_e2e import FINAL, answered_by, start_turn
from tests.adapters.surfaces.slack.test_policies import notice_to
from tests.fakes.slack_api import BOT_USER_ID

BOB = "U0BOB00001"
CAROL = "U0CAROL001"
POLICY = f"""\
rules:
  - match: {{tool: requestApproval, arguments: {{action: Restart the cache}}}}
    approvers: [slack:{BOB}]
    timeout_seconds: 30
    escalate:
      - {{after_seconds: 0.3, remind: true}}
  - match: {{tool: requestApproval, arguments: {{action: Deploy to production}}}}
    approvers: [slack:{BOB}]
    allow_self: false
    timeout_seconds: 30
    escalate:
      - {{after_seconds: 3, approvers: [slack:{CAROL}]}}
  - match: {{tool: "*"}}
    approvers: [actor]
"""


async def served(start_env: StartEnv, tmp_path: Path) -> Env:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    for user, name in ((BOB, "bob"), (CAROL, "carol")):
        env.slack.add_user(user, name)
    return env


async def shown(env: Env, message: JSON, words: str) -> JSON:
    """The request's message once an edit says `words`, still open."""

    def edited() -> JSON:
        current = env.slack.message(CHANNEL, message["ts"])
        said = words in json.dumps(current["blocks"])
        return current if said and has_actions(current) else {}

    return await env.slack.wait_for(edited, WAIT)


async def bot_replies(env: Env, root: str, count: int) -> list[str]:
    """The texts of the bot's plain replies in the thread of `root`, once there are `count`."""

    def replies() -> list[str]:
        found = [m["text"] for m in env.slack.thread(CHANNEL, root)
                 if (m.get("user") == BOT_USER_ID and not m.get("blocks"))
                 or env.slack.streaming(CHANNEL, m["ts"]) is False]  # fmt: skip
        return found if len(found) >= count else []

    return await env.slack.wait_for(replies, WAIT)


async def test_a_reminder_edits_the_message_and_pings_once(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    restart = {"action": "Restart the cache", "reason": "it is slow"}
    whom = f"Asked by <@{ALICE}>. Approvers: <@{BOB}>. Expires "
    thread, message = await start_turn(env, "requestApproval", restart, whom=whom)
    await shown(env, message, "Reminder: waiting 0.3 s for an answer.")
    (ping,) = await bot_replies(env, thread.ts, 1)
    assert ping == f"Reminder: <@{BOB}>: this request has waited 0.3 s for an answer."
    record = await env.request_record(message)
    (line,) = [e for e in await env.store.list_audit(request_id=record.id) if e.action == REMINDED]
    assert line.detail == {"step": 0, "after_seconds": 0.3, "remind": True}
    assert line.actor_id is None  # the bridge's, not a person's

    await env.click(message, "hitl_approve", user=BOB)
    await thread.settled(message, answered_by(BOB))
    texts = await bot_replies(env, thread.ts, 2)
    # One extra message for the step, no more; the streamed reply began above it, at the call.
    assert texts == [FINAL, ping]
    assert json.loads(env.tool_result(2)["content"]) == {"approved": True}


@pytest.mark.slow  # an escalation's deadline passes
async def test_an_approvers_step_lets_the_added_approver_answer(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    deploy = {"action": "Deploy to production", "reason": "v2"}
    whom = f"Asked by <@{ALICE}>. Approvers: <@{BOB}>. Expires "
    thread, message = await start_turn(env, "requestApproval", deploy, whom=whom)
    await env.click(message, "hitl_approve", user=CAROL)  # not (yet) an approver
    assert await notice_to(env, CAROL, 1) == f"Only <@{BOB}> may answer this request."

    current = await shown(env, message, f"Escalated after 3 s to <@{CAROL}>.")
    assert f"Approvers: <@{BOB}>, <@{CAROL}>." in json.dumps(current["blocks"])
    (ping,) = await bot_replies(env, thread.ts, 1)
    assert ping == f"Escalated after 3 s: <@{CAROL}> may now answer this request."
    await env.click(message, "hitl_approve", user=CAROL)
    await thread.settled(message, answered_by(CAROL))
    assert await bot_replies(env, thread.ts, 2) == [FINAL, ping]  # the stream began first
    record = await env.request_record(message)
    audit = await env.store.list_audit(request_id=record.id)
    (line,) = [e for e in audit if e.action == ESCALATED]
    assert line.detail == {"step": 0, "after_seconds": 3, "remind": False,
                           "approvers_added": [f"slack:{CAROL}"]}  # fmt: skip
    refused = [e.actor_id for e in audit if e.action == "answer_refused"]
    assert refused == [CAROL]
