"""A gated tool end to end through Teams: the served bridge with an agent file whose Python
tool needs approval; the card shows the call with Approve / Approve and allow / Edit / Decline,
approved or edited with an `adaptiveCard/action` invoke, and the call runs once as approved."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.adapters.gated_tools import CALL, FINAL, TOKEN, agent_file
from tests.adapters.surfaces.teams.conftest import (
    ALICE,
    STRANGER,
    Chat,
    Env,
    StartEnv,
    inputs_of,
    is_live,
    request_id_of,
    text_of,
    verbs,
)
from tests.fakes.anthropic_api import reply_text, reply_tool_use

pytestmark = pytest.mark.usefixtures("runs")  # the runs of `deploy`, per test


@pytest.fixture
async def env(start_env: StartEnv, tmp_path: Path) -> Env:
    return await start_env(**agent_file(tmp_path))


async def asked(env: Env) -> tuple[Chat, str, dict[str, Any]]:
    """Alice asks; the model calls deploy: the chat, the card's activity and Alice's live card."""
    env.model.script(reply_tool_use("deploy", CALL), reply_text(FINAL))
    chat = await env.say("deploy the api please")
    activity_id, card = await chat.request()
    live = (await chat.invoke("hitl_refresh", request_id_of(card), trigger="automatic")).card
    assert is_live(live)
    assert verbs(live) == ["hitl_approve", "hitl_grant", "hitl_edit", "hitl_decline"]
    shown = text_of(live)
    assert "Run deploy?" in shown and "production" in shown and "•••" in shown
    assert TOKEN not in shown and TOKEN not in text_of(card)
    return chat, activity_id, live


async def test_a_gated_call_is_approved_on_the_card_and_runs_once(
    env: Env, runs: list[dict[str, Any]]
) -> None:
    chat, activity_id, live = await asked(env)
    assert runs == []
    reply = await chat.invoke("hitl_approve", request_id_of(live))
    assert f"Answered by {ALICE.name}" in text_of(reply.card)
    settled = await chat.settled(activity_id, "Outcome")
    assert not is_live(settled) and '"ok"' in json.dumps(settled)
    assert await chat.reply() == FINAL
    assert env.tool_result(2)["content"] == "deployed api to production (1 replicas)"
    assert runs == [CALL]
    assert all(TOKEN not in text_of(v) for v in chat.versions(activity_id))


async def test_a_gated_call_is_edited_on_the_card(env: Env, runs: list[dict[str, Any]]) -> None:
    chat, activity_id, live = await asked(env)
    drawn = inputs_of(live)
    assert {"edit.service", "edit.env", "edit.replicas"} <= set(drawn)
    assert not any("token" in key for key in drawn)
    assert drawn["edit.service"]["value"] == "api" and drawn["edit.env"]["value"] == "1"
    edit = {"edit.service": "api", "edit.env": "0", "edit.replicas": "2.5"}
    invalid = (await chat.invoke("hitl_edit", request_id_of(live), inputs=edit)).card
    assert "Enter a whole number" in text_of(invalid) and is_live(invalid) and runs == []

    reply = await chat.invoke(
        "hitl_edit", request_id_of(live), inputs={**edit, "edit.replicas": "3"}
    )
    assert f"Answered by {ALICE.name}" in text_of(reply.card)
    await chat.settled(activity_id, "Outcome")
    assert await chat.reply() == FINAL
    assert env.tool_result(2)["content"] == (
        f'Edited by {ALICE.aad}: env: "production" → "staging"; replicas: 1 → 3\n'
        "deployed api to staging (3 replicas)"
    )
    assert runs == [{"service": "api", "env": "staging", "token": TOKEN, "replicas": 3}]


async def test_a_grant_is_listed_used_and_revoked_with_the_hitl_command(
    env: Env, runs: list[dict[str, Any]]
) -> None:
    chat, activity_id, live = await asked(env)
    await chat.invoke("hitl_grant", request_id_of(live))
    await chat.settled(activity_id, "Outcome")
    assert await chat.reply() == FINAL

    await env.say("hitl grants")
    listed = await chat.reply(2)
    (grant,) = await env.store.list_grants()
    assert listed.startswith("1 tool grant(s) here:")
    assert f"`{grant.id}` deploy for {ALICE.name}" in listed
    assert f"granted by {ALICE.name}" in listed
    assert "Revoke one with `@hitl-bridge hitl revoke <id>`." in listed

    # Alice's next deploy here runs unasked.
    env.model.script(reply_tool_use("deploy", CALL), reply_text(FINAL))
    await env.say("once more please")
    assert await chat.reply(3) == FINAL and len(runs) == 2

    await env.say(f"hitl revoke {grant.id}", user=STRANGER)
    assert await chat.reply(4) == f"Cannot revoke: you may not revoke grant {grant.id}."
    await env.say(f"hitl revoke {grant.id}")
    assert await chat.reply(5) == f"Revoked `{grant.id}`: deploy asks {ALICE.name} again."
    await env.say("hitl grants")
    assert await chat.reply(6) == "No tool is allowed to run unasked in this conversation."
    await env.say("hitl")
    assert await chat.reply(7) == "Nothing is waiting for an answer in this conversation."
    audit = {e.action for e in await env.store.list_audit(limit=200)}
    assert {"grant.created", "grant.used", "grant.revoked"} <= audit
