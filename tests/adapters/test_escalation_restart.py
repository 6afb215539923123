"""An escalation survives a restart: real `hitl-bridge serve` processes (tests/adapters/workers.py)
on one SQLite database. The first step fires on the first worker, which is then stopped (Slack)
or killed (Teams); a new worker on the same database fires the second step once (at its time,
or at start if it fell due meanwhile) and never the first again; the approver it added answers
there."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.durable.escalations import ESCALATED, REMINDED
from bot.records import AuditEntry
from tests.adapters.surfaces.teams import conftest as teams
from tests.adapters.test_durability import TEAMS, TeamsChat
from tests.adapters.workers import CHANNEL, WAIT, Cluster, Thread, cluster, eventually
from tests.fakes.anthropic_api import reply_text, reply_tool_use
from tests.fakes.slack_api import BOT_USER_ID

pytestmark = pytest.mark.subprocess  # `hitl-bridge serve` runs as worker processes

BOB = "U0BOB00001"
CAROL = "U0CAROL001"
FINAL = "All done, thanks."
APPROVAL = {"action": "Deploy v2", "reason": "Release day"}
STOP_BOUND = 10.0  # a worker told to stop exits within 10 s
POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [slack:{BOB}]
    timeout_seconds: 120
    escalate:
      - {{after_seconds: 0.5, remind: true}}
      - {{after_seconds: 8, approvers: [slack:{CAROL}]}}
"""


@pytest.fixture
def teams_cards_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    """FakeBotConnector checks every card against the Adaptive Card 1.5 schema."""
    monkeypatch.setenv("HITL_TEAMS_SCHEMA_DIR", str(teams.SCHEMAS))


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with cluster(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}", tmp_path) as running:
        running.slack.add_user(BOB, "bob")
        running.slack.add_user(CAROL, "carol")
        yield running


async def steps_audited(c: Cluster, request_id: str, count: int) -> list[AuditEntry]:
    """The request's escalation audit lines, oldest first, once there are `count`."""

    async def found() -> list[AuditEntry] | None:
        audit = await c.store.list_audit(request_id=request_id)
        lines = [e for e in reversed(audit) if e.action in (REMINDED, ESCALATED)]
        return lines if len(lines) >= count else None

    return await eventually(found, f"{count} escalation steps of {request_id} audited")


def pings(thread: Thread) -> list[str]:
    """The bot's plain messages in the thread: not the agent's replies (streamed, or its
    final words posted whole by the worker that took the run over)."""
    plain = [m for m in thread.bot_messages() if not m.get("blocks") and not thread.streamed(m)]
    return [m["text"] for m in plain if m["text"] != FINAL]


async def test_a_restart_between_two_steps_fires_each_once(sqlite: Cluster, tmp_path: Path) -> None:
    c = sqlite
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e1"), reply_text(FINAL))
    first = await c.start_worker("one", HITL_POLICY_FILE=str(policy))
    thread = await c.mention(first, "deploy v2")
    message, record = await thread.posted()
    (reminded,) = await steps_audited(c, record.id, 1)
    assert reminded.action == REMINDED and reminded.detail["step"] == 0
    await c.slack.wait_for(lambda: len(pings(thread)) == 1)
    assert await c.terminate(first, STOP_BOUND) == 0

    second = await c.start_worker("two", HITL_POLICY_FILE=str(policy))
    lines = await steps_audited(c, record.id, 2)
    assert [(e.action, e.detail["step"]) for e in lines] == [(REMINDED, 0), (ESCALATED, 1)]
    assert lines[1].detail["approvers_added"] == [f"slack:{CAROL}"]
    escalated = f"Escalated after 8 s to <@{CAROL}>."

    def edited() -> bool:
        return escalated in json.dumps(c.slack.message(CHANNEL, message["ts"])["blocks"])

    await c.slack.wait_for(edited)
    await c.slack.wait_for(lambda: len(pings(thread)) == 2)
    assert pings(thread) == [
        f"Reminder: <@{BOB}>: this request has waited 0.5 s for an answer.",
        f"Escalated after 8 s: <@{CAROL}> may now answer this request.",
    ]
    await c.click(second, message, "hitl_approve", user=CAROL)
    await thread.settled(message, f"Answered by <@{CAROL}>")
    await thread.reply(FINAL)
    assert len(await steps_audited(c, record.id, 2)) == 2  # the first step never again
    assert len(pings(thread)) == 2
    bot_posts = [m for m in c.slack.thread(CHANNEL, thread.ts) if m.get("user") == BOT_USER_ID]
    streams = [m for m in bot_posts if thread.streamed(m)]
    assert len(streams) == 1  # the first worker's reply (its steps), left as Slack leaves it
    assert len(bot_posts) - len(streams) == 4  # the request, two pings, the final words


TEAMS_BOB = teams.User("0b0b0000-0000-4000-8000-00000000b0b0", "29:1bob-bf-id", "Bob Baker")
TEAMS_CAROL = teams.User("0ca20000-0000-4000-8000-000000000ca2", "29:1carol-bf-id", "Carol Chen")


@pytest.mark.usefixtures("teams_cards_checked")
async def test_teams_a_kill_between_two_steps_fires_each_once(
    sqlite: Cluster, tmp_path: Path
) -> None:
    """Teams' side, the first worker killed (nothing of it runs after): the second worker
    fires the second step once, updating the card from the stored reference and saying it
    in the conversation, and the approver it added answers there."""
    c = sqlite
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY.replace(f"slack:{BOB}", f"teams:{TEAMS_BOB.aad}")
                      .replace(f"slack:{CAROL}", f"teams:{TEAMS_CAROL.aad}"))  # fmt: skip
    c.model.script(reply_tool_use("requestApproval", APPROVAL, id="toolu_e2"), reply_text(FINAL))
    first = await c.start_worker("one", HITL_POLICY_FILE=str(policy), **TEAMS)
    chat = TeamsChat(c)
    await chat.say(first, "deploy v2")
    activity_id, request_id = await chat.posted()
    await steps_audited(c, request_id, 1)
    await chat.reply(f"Reminder: {TEAMS_BOB.aad}: this request has waited 0.5 s for an answer.")
    await c.kill(first)

    second = await c.start_worker("two", HITL_POLICY_FILE=str(policy), **TEAMS)
    lines = await steps_audited(c, request_id, 2)
    assert [(e.action, e.detail["step"]) for e in lines] == [(REMINDED, 0), (ESCALATED, 1)]
    added = f"Escalated after 8 s: {TEAMS_CAROL.aad} may now answer this request."
    await chat.reply(added)

    def escalated() -> bool:
        card = chat.cards(activity_id)[-1]
        return bool(card.get("refresh")) and f"Escalated after 8 s to {TEAMS_CAROL.aad}" in (
            json.dumps(card))  # fmt: skip

    await c.connector.wait_for(escalated, WAIT)
    url = c.connector.service_url
    approve = teams.invoke_activity(url, "hitl_approve", request_id, user=TEAMS_CAROL)
    reply = await c.post_activity(second, approve)
    assert "Answered by Carol Chen" in json.dumps(reply["value"])
    await chat.settled(activity_id, "Answered by")
    await chat.reply(FINAL)
    assert len(await steps_audited(c, request_id, 2)) == 2  # the first step never again
    assert chat.texts() == [
        f"Reminder: {TEAMS_BOB.aad}: this request has waited 0.5 s for an answer.", added, FINAL,
    ]  # fmt: skip
