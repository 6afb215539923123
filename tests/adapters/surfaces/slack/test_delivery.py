"""A policy's `deliver` end to end in Slack: one request shown in its thread and in an
approvals channel, or in each approver's DM (conversations.open); an answer on any copy settles
the one request and every copy is edited (the fake Slack API's chat.update calls), the live
tally shown on every copy meanwhile; a copy that cannot be shown is audited and the request
stays open in its thread."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from bot.records import AuditEntry, RequestStatus
from tests.adapters.surfaces.slack.conftest import (
    ALICE,
    CHANNEL,
    JSON,
    WAIT,
    Env,
    StartEnv,
    has_actions,
)
from tests.adapters.surfaces.slack.test_e2e import answered_by, finish, start_turn
from tests.fakes.slack_signing import block_actions_payload

BOB = "U0BOB00001"
CAROL = "U0CAROL001"
OPS = "S0OPSTEAM"  # Carol's group: a group gets no direct message
APPROVALS = "C0APPROVALS"
NOWHERE = "C0NOWHERE1"  # a channel the app is not in
POLICY = f"""\
rules:
  - match: {{tool: requestApproval, arguments: {{action: Deploy to production}}}}
    approvers: [slack:{BOB}]
    deliver: [thread, slack:{APPROVALS}]
  - match: {{tool: requestApproval, arguments: {{action: Drop the database}}}}
    approvers: [slack:{BOB}, slack:{CAROL}, slack:{OPS}]
    required: 2
    deliver: [thread, approvers_dm]
  - match: {{tool: requestApproval, arguments: {{action: Rotate keys}}}}
    approvers: [actor]
    deliver: [thread, slack:{NOWHERE}]
  - match: {{tool: "*"}}
    approvers: [actor]
"""


async def served(start_env: StartEnv, tmp_path: Path) -> Env:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    for user, name in ((BOB, "bob"), (CAROL, "carol")):
        env.slack.add_user(user, name)
    env.slack.add_usergroup(OPS, [CAROL])
    env.slack.channels.add(APPROVALS)  # the app is in the approvals channel
    return env


def dm_of(user: str) -> str:
    """The fake Slack's DM channel with `user` (conversations.open)."""
    return "D" + user[1:]


async def copy_in(env: Env, channel: str) -> JSON:
    """The live copy of the request posted in `channel` (not in a thread)."""

    def live() -> JSON:
        found = [m for m in env.slack.messages(channel) if has_actions(m)]
        return found[0] if found else {}

    return await env.slack.wait_for(live, WAIT)


async def click_in(env: Env, channel: str, message: JSON, action: str, user: str) -> None:
    payload = block_actions_payload(
        message=message,
        channel_id=channel,
        action_id=action,
        user_id=user,
        trigger_id=env.slack.new_trigger_id(),
        response_url=env.slack.new_response_url(channel, message["ts"]),
    )
    response = await env.post(payload)
    assert response.status == 200, await response.text()


async def settled_in(env: Env, channel: str, ts: str, marker: str) -> JSON:
    def done() -> JSON:
        current = env.slack.message(channel, ts)
        return {} if has_actions(current) or marker not in json.dumps(current) else current

    return await env.slack.wait_for(done, WAIT)


def updated(env: Env) -> list[tuple[str, str]]:
    """(channel, ts) of every chat.update the bridge made, in order."""
    return [(str(c["channel"]), str(c["ts"])) for c in env.slack.calls_to("chat.update")]


async def undeliverable_copies(env: Env, request_id: str) -> list[AuditEntry]:
    """The request's `undeliverable_copy` audit lines, once there is one (polled)."""
    async with asyncio.timeout(WAIT):
        while True:
            entries = await env.store.list_audit(request_id=request_id)
            found = [e for e in entries if e.action == "undeliverable_copy"]
            if found:
                return found
            await asyncio.sleep(0.02)


async def audit_actions(env: Env, request_id: str | None = None) -> list[str]:
    return [entry.action for entry in await env.store.list_audit(request_id=request_id)]


async def test_an_answer_in_the_approvals_channel_edits_both_copies(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    deploy = {"action": "Deploy to production", "reason": "v2"}
    thread, message = await start_turn(
        env, "requestApproval", deploy, whom=f"Approvers: <@{BOB}>. Expires "
    )
    copy = await copy_in(env, APPROVALS)
    assert copy.get("thread_ts") is None  # a message of its own in the channel
    assert "Deploy to production" in json.dumps(copy["blocks"])
    assert [m for m in env.slack.messages(APPROVALS) if "Preparing" in m["text"]] == []
    record = await env.request_record(message)
    assert env.slack.calls_to("conversations.info")[0]["channel"] == APPROVALS

    await click_in(env, APPROVALS, copy, "hitl_approve", BOB)  # Bob, in the channel

    result = await finish(env, thread, message, answered_by(BOB))
    assert json.loads(result["content"]) == {"approved": True}
    in_channel = await settled_in(env, APPROVALS, copy["ts"], answered_by(BOB))
    assert "Approved" in json.dumps(in_channel["blocks"])
    assert (CHANNEL, message["ts"]) in updated(env) and (APPROVALS, copy["ts"]) in updated(env)
    settled = await env.store.get_request(record.id)
    assert settled is not None and settled.status is RequestStatus.RESOLVED
    assert settled.settled_by == BOB
    assert "undeliverable_copy" not in await audit_actions(env, record.id)


async def test_approvers_get_a_dm_each_and_every_copy_shows_the_tally(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    drop = {"action": "Drop the database", "reason": "cleanup"}
    thread, message = await start_turn(
        env, "requestApproval", drop, whom=f"Approvers: <@{BOB}>, <@{CAROL}>, <!subteam^{OPS}>."
    )
    bob_dm, carol_dm = await copy_in(env, dm_of(BOB)), await copy_in(env, dm_of(CAROL))
    opened = sorted(str(c["users"]) for c in env.slack.calls_to("conversations.open"))
    assert set(opened) == {BOB, CAROL}  # the named users; the group's members get none
    assert ALICE not in opened

    await click_in(env, dm_of(BOB), bob_dm, "hitl_approve", BOB)
    tally = f"1 of 2 approvals: <@{BOB}>"

    copies = ((CHANNEL, message["ts"]), (dm_of(BOB), bob_dm["ts"]), (dm_of(CAROL), carol_dm["ts"]))

    def all_show_tally() -> bool:
        shown = [env.slack.message(channel, ts) for channel, ts in copies]
        return all(has_actions(m) and tally in json.dumps(m) for m in shown)

    assert await env.slack.wait_for(all_show_tally, WAIT)  # the thread's and both DMs

    await click_in(env, dm_of(CAROL), carol_dm, "hitl_approve", CAROL)
    result = await finish(env, thread, message, "Approved")
    assert json.loads(result["content"])["approved_by"] == [BOB, CAROL]
    for channel, ts in ((dm_of(BOB), bob_dm["ts"]), (dm_of(CAROL), carol_dm["ts"])):
        await settled_in(env, channel, ts, "Approved")
        assert (channel, ts) in updated(env)


async def test_a_copy_that_cannot_be_shown_is_audited_and_the_request_stays_open(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    rotate: dict[str, Any] = {"action": "Rotate keys", "reason": "quarterly"}
    thread, message = await start_turn(env, "requestApproval", rotate)
    record = await env.request_record(message)

    entries = await undeliverable_copies(env, record.id)
    (entry,) = entries
    assert entry.detail["room"] == f"slack:{NOWHERE}"
    assert NOWHERE in entry.detail["reason"]
    pending = await env.store.get_request(record.id)
    assert pending is not None and pending.status is RequestStatus.PENDING

    await env.click(message, "hitl_approve")  # Alice, in the thread: her own request
    result = await finish(env, thread, message, answered_by(ALICE))
    assert json.loads(result["content"]) == {"approved": True}
    assert env.slack.messages(NOWHERE) == []
    assert "undeliverable" not in await audit_actions(env, record.id)
