"""A door's request in Teams: asked through the HTTP API, shown as a card in a conversation
the bot knows, answered by an invoke there; an unknown conversation is a 400 naming it."""

from __future__ import annotations

from typing import Any

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.surfaces.teams.conftest import (
    ALICE,
    PERSONAL,
    Env,
    StartEnv,
    is_live,
    request_id_of,
)
from tests.fakes.anthropic_api import reply_text

APPROVAL = {"action": "Deploy v2", "reason": "Release day"}


async def create(env: Env, token: str, to: str) -> tuple[int, dict[str, Any]]:
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": to}
    headers = {"Authorization": f"Bearer {token}"}
    url = f"{env.server.url}/api/v1/requests"
    async with env.http.post(url, json=body, headers=headers) as response:
        return response.status, await response.json()


async def test_a_door_request_is_a_card_in_a_known_conversation(start_env: StartEnv) -> None:
    env = await start_env()
    token, _ = await Tokens(DoorTables(env.store)).create("ci-agent")
    status, unknown = await create(env, token, f"teams:{PERSONAL}")
    assert status == 400 and "message the bot there first" in unknown["message"]

    env.model.script(reply_text("Hello!"))
    chat = await env.say("hi")  # the bridge now knows the conversation
    assert await chat.reply() == "Hello!"
    status, made = await create(env, token, f"teams:{PERSONAL}/{ALICE.aad}")
    assert status == 201, made
    _, card = await chat.request()
    assert request_id_of(card) == made["id"]
    live = (await chat.invoke("hitl_refresh", made["id"], trigger="automatic")).card
    assert is_live(live)
    await chat.invoke("hitl_approve", made["id"])
    url = f"{env.server.url}/api/v1/requests/{made['id']}?wait=5"
    async with env.http.get(url, headers={"Authorization": f"Bearer {token}"}) as response:
        answered = await response.json()
    assert answered["status"] == "answered" and answered["answered_by"] == ALICE.aad
    assert answered["answer"] == {"approved": True}
