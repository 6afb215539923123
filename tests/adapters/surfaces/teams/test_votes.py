"""A policy file end to end in Teams (HITL_POLICY_FILE): two approvals of the three people the
rule names by AAD object id, the card in the conversation updated with the tally between them,
every refreshed card showing it, the model's result naming both and the third approver's click
too late; one decline among the approvals declines, the decliner's reason reaching the model."""

from __future__ import annotations

import json
from pathlib import Path

from bot.records import RequestStatus
from tests.adapters.surfaces.teams.conftest import (
    ALICE,
    BOB,
    CAROL,
    WAIT,
    Chat,
    Env,
    StartEnv,
    User,
    is_live,
    request_id_of,
    text_of,
)
from tests.adapters.surfaces.teams.test_e2e import assert_settled_reply, finish, start_turn

DAVE = User("0da40000-0000-4000-8000-000000000da4", "29:1dave-bf-id", "Dave Diaz")
POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [teams:{BOB.aad}, teams:{CAROL.aad}, teams:{DAVE.aad}]
    required: 2
  - match: {{tool: "*"}}
    approvers: [actor]
"""
TALLY = f"1 of 2 approvals: {BOB.name}"
WHOM = f"Asked by {ALICE.name}. Approvers: {BOB.aad}, {CAROL.aad}, {DAVE.aad}. Expires "


async def served(start_env: StartEnv, tmp_path: Path) -> Env:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    return await start_env(HITL_POLICY_FILE=str(policy))


async def approve(chat: Chat, request_id: str, user: User) -> str:
    """`user` fetches the live card (they are not among its refreshing users: a manual
    refresh), then approves: the text of the card they are answered with."""
    live = (await chat.invoke("hitl_refresh", request_id, user=user)).card
    assert is_live(live)
    return text_of((await chat.invoke("hitl_approve", request_id, user=user)).card)


async def test_two_approvals_with_the_tally_on_every_card(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    deploy = {"action": "Deploy v2", "reason": "Release day"}
    chat, activity_id, card = await start_turn(env, "requestApproval", deploy, whom=WHOM)
    request_id = str(card["refresh"]["action"]["data"]["request_id"])

    said = await approve(chat, request_id, BOB)
    assert TALLY in said  # Bob's own card: the tally, and no controls (one vote each)

    def tallied() -> bool:
        current = chat.card(activity_id)
        return TALLY in text_of(current) and bool(current.get("refresh"))

    assert await env.connector.wait_for(tallied, WAIT)  # the card everyone sees, updated
    again = (await chat.invoke("hitl_approve", request_id, user=BOB)).card
    assert f"You voted already: {TALLY}." in text_of(again) and not is_live(again)
    refreshed = (await chat.invoke("hitl_refresh", request_id, user=CAROL)).card
    assert TALLY in text_of(refreshed) and is_live(refreshed)  # as every refresh draws it

    answered = f"Answered by {BOB.name} and {CAROL.name}"
    reply = await chat.invoke("hitl_approve", request_id, user=CAROL)
    assert_settled_reply(reply, answered)
    result = await finish(env, chat, activity_id, answered)
    assert json.loads(result["content"]) == {"approved": True, "approved_by": [BOB.aad, CAROL.aad]}

    late = (await chat.invoke("hitl_approve", request_id, user=DAVE)).card  # the third
    assert "This request was already answered" in text_of(late) and not is_live(late)
    assert await votes_cast(env, request_id) == [(BOB.aad, True), (CAROL.aad, True)]


async def votes_cast(env: Env, request_id: str) -> list[tuple[str | None, bool]]:
    audit = await env.store.list_audit(request_id=request_id)
    return [(e.actor_id, e.detail["approve"]) for e in reversed(audit) if e.action == "vote.cast"]


async def test_a_decline_among_the_approvals_declines(start_env: StartEnv, tmp_path: Path) -> None:
    env = await served(start_env, tmp_path)
    deploy = {"action": "Deploy v2", "reason": "Release day"}
    chat, activity_id, card = await start_turn(env, "requestApproval", deploy, whom=WHOM)
    request_id = request_id_of(card)
    assert TALLY in await approve(chat, request_id, BOB)

    live = (await chat.invoke("hitl_refresh", request_id, user=CAROL)).card
    assert is_live(live) and TALLY in text_of(live)
    reply = await chat.invoke(
        "hitl_decline", request_id, user=CAROL, inputs={"decline.reason": "Code freeze"}
    )
    declined = f"Declined by {CAROL.name}"
    shown = assert_settled_reply(reply, declined)
    assert "Code freeze" in text_of(shown) and TALLY not in text_of(shown)
    result = await finish(env, chat, activity_id, declined)
    assert result["is_error"] is True and "Code freeze" in json.loads(result["content"])["error"]
    record = await env.record(request_id)
    assert (record.status, record.settled_by) == (RequestStatus.REJECTED, CAROL.aad)
    assert await votes_cast(env, request_id) == [(BOB.aad, True), (CAROL.aad, False)]
