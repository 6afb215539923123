"""A policy's `deliver` end to end in Teams: one request shown in the conversation that asked
and as a copy in an approvals conversation (`teams:<conversation id>`, one the bot has heard
from); an answer on the copy settles the one request and both cards are updated in place
(the fake Bot Connector's PUTs), neither keeping live controls."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from bot.records import RequestStatus
from bot.store import SqlStore
from bot.store.copies import CopyTables
from tests.adapters.surfaces.teams.conftest import (
    ALICE,
    BOB,
    JSON,
    WAIT,
    StartEnv,
    is_live,
    request_id_of,
    text_of,
)
from tests.adapters.surfaces.teams.test_e2e import assert_settled_reply, finish, start_turn

APPROVALS = "19:approvals0chat@thread.v2"  # a group chat the bot is in
POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [teams:{BOB.aad}]
    deliver: [thread, "teams:{APPROVALS}"]
  - match: {{tool: "*"}}
    approvers: [actor]
"""


async def copy_ref(store: SqlStore, request_id: str, room_id: str) -> JSON:
    """Where the Teams copy of the request in `room_id` was posted, once it is recorded."""
    copies = CopyTables(store)
    async with asyncio.timeout(WAIT):
        while True:
            ref = await copies.ref(request_id, "teams", room_id)
            if ref is not None:
                return dict(ref)
            await asyncio.sleep(0.02)


async def test_an_answer_in_the_approvals_conversation_updates_both_cards(
    start_env: StartEnv, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    # Bob speaks to the bot in the approvals chat first: the bridge learns how to reach it.
    approvals = await env.say("hitl", conversation_id=APPROVALS, user=BOB)
    assert (await approvals.reply()).startswith("Nothing is waiting")

    deploy = {"action": "Deploy v2", "reason": "Release day"}
    whom = f"Asked by {ALICE.name}. Approvers: {BOB.name}. Expires "
    chat, activity_id, card = await start_turn(
        env, "requestApproval", deploy, user_ids=2, whom=whom
    )
    assert card["refresh"]["userIds"] == [ALICE.id, BOB.id]  # Bob, whom the rule names
    request_id = request_id_of(card)
    copy_id = str((await copy_ref(env.store, request_id, approvals.room_id))["activity_id"])
    copy = approvals.card(copy_id)
    assert "Deploy v2" in text_of(copy) and request_id_of(copy) == request_id

    live = (await approvals.invoke("hitl_refresh", request_id, user=BOB)).card
    assert is_live(live)
    answered = f"Answered by {BOB.name}"
    assert_settled_reply(await approvals.invoke("hitl_approve", request_id, user=BOB), answered)

    result = await finish(env, chat, activity_id, answered)  # the asking chat's card
    assert json.loads(result["content"]) == {"approved": True}
    in_approvals = await approvals.settled(copy_id, answered)  # and the copy
    assert not is_live(in_approvals) and "refresh" not in in_approvals
    puts = {(c.conversation_id, c.activity_id) for c in env.connector.calls_to("PUT")}
    assert {(chat.conversation_id, activity_id), (APPROVALS, copy_id)} <= puts
    record = await env.record(request_id)
    assert (record.status, record.settled_by) == (RequestStatus.RESOLVED, BOB.aad)
    audit = [e.action for e in await env.store.list_audit(request_id=request_id)]
    assert "undeliverable_copy" not in audit
