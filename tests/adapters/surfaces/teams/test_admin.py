"""The `hitl` commands of admins on Teams, end to end through the fake Bot Connector: `mine`,
a non-admin refused (and audited), an admin's cancel; only in a personal chat."""

from __future__ import annotations

import json

from tests.adapters.surfaces.teams.conftest import (
    ADMIN,
    ALICE,
    CHANNEL,
    STRANGER,
    Chat,
    Env,
    request_id_of,
    text_of,
)
from tests.fakes.anthropic_api import reply_text, reply_tool_use

FINAL = "All done, thanks."
ADMIN_CHAT = "a:1personal-chat-with-admin"
STRANGER_CHAT = "a:1personal-chat-with-mallory"


async def approval(env: Env) -> tuple[Chat, str, str]:
    """Alice asks in her personal chat; the model asks her to approve: chat, card, request."""
    env.model.script(
        reply_tool_use("requestApproval", {"action": "Deploy v2", "reason": "Release day"}),
        reply_text(FINAL),
    )
    chat = await env.say("deploy please")
    activity_id, card = await chat.request()
    return chat, activity_id, request_id_of(card)


async def test_mine_a_refused_admin_command_and_an_admins_cancel(env: Env) -> None:
    chat, activity_id, request_id = await approval(env)

    await env.say("hitl mine")
    mine = await chat.reply(1)
    assert mine.startswith("1 request(s) waiting for your answer:")
    assert f"`{request_id}` requestApproval for {ALICE.name} in teams:{chat.conversation_id}" in (
        mine
    )

    stranger = await env.say("hitl audit", conversation_id=STRANGER_CHAT, user=STRANGER)
    assert await stranger.reply() == (
        "Only the bridge's admins may do that; the attempt is recorded."
    )
    (refused,) = await env.store.list_audit(actor_id=STRANGER.aad)
    assert refused.action == "admin.refused"
    assert refused.detail == {"command": "audit", "surface": "teams"}

    admin = await env.say(
        f"hitl cancel {request_id} not today", conversation_id=ADMIN_CHAT, user=ADMIN
    )
    assert await admin.reply() == (
        f"Cancelled `{request_id}` (requestApproval); whoever waited on it is told."
    )
    settled = await chat.settled(activity_id, "Cancelled by an admin")
    assert f"Cancelled by an admin, {ADMIN.name}" in text_of(settled)
    assert "not today" in text_of(settled)
    assert await chat.reply(2) == FINAL
    result = env.tool_result(2)
    assert result["is_error"] is True
    assert json.loads(result["content"]) == {"error": "Cancelled by an admin: not today"}


async def test_admin_views_are_answered_only_in_a_personal_chat(env: Env) -> None:
    await approval(env)
    # In a channel everyone reads the reply: an admin is asked to use a personal chat.
    channel = await env.say("hitl audit", conversation_id=CHANNEL, user=ADMIN)
    assert await channel.reply() == (
        "Ask me that in a private chat: a reply here is seen by everyone."
    )
    mine = await env.say("hitl mine", conversation_id=CHANNEL)
    assert await mine.reply() == "Ask me that in a private chat: a reply here is seen by everyone."

    admin = await env.say("hitl pending", conversation_id=ADMIN_CHAT, user=ADMIN)
    everywhere = await admin.reply()
    assert everywhere.startswith("1 request(s) waiting for an answer:")
    assert f"requestApproval for {ALICE.name} in teams:" in everywhere
    await env.say("hitl audit requestApproval 1h", conversation_id=ADMIN_CHAT, user=ADMIN)
    audit = await admin.reply(2)
    assert audit.startswith("The latest 2 audit line(s):")
    assert "request.created" in audit and "request.delivered" in audit
