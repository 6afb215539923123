"""A policy file on Teams: the rule decides who may answer a card, checked at the invoke; the
actor refused under `allow_self: false`; a group that cannot be read (an Entra group, with no
Microsoft Graph credentials here) lets nobody in and says so; admins may answer."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.teams.conftest import (
    ADMIN,
    ALICE,
    STRANGER,
    StartEnv,
    is_live,
    request_id_of,
    text_of,
)
from tests.fakes.anthropic_api import reply_text, reply_tool_use

ENTRA = "3f2c9a4e-6b1d-4e8a-9c7f-2d5b8e1a0c64"
POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [entra:{ENTRA}]
    allow_self: false
"""


async def test_the_rule_decides_who_may_answer_a_card(start_env: StartEnv, tmp_path: Path) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    env.model.script(reply_tool_use("requestApproval", {"action": "Deploy v2", "reason": "x"}),
                     reply_text("Done."))  # fmt: skip
    chat = await env.say("deploy please")
    _, card = await chat.request()
    request_id = request_id_of(card)

    own = (await chat.invoke("hitl_approve", request_id)).card  # Alice asked: four eyes
    assert "someone other than you" in text_of(own) and not is_live(own)
    stranger = (await chat.invoke("hitl_approve", request_id, user=STRANGER)).card
    assert f"The members of entra:{ENTRA} cannot be read" in text_of(stranger)
    manual = await chat.invoke("hitl_refresh", request_id, user=STRANGER, trigger="manual")
    assert "cannot be read" in text_of(manual.card) and not is_live(manual.card)

    admin = (await chat.invoke("hitl_approve", request_id, user=ADMIN)).card
    assert f"Answered by {ADMIN.name}" in text_of(admin)
    assert await chat.reply() == "Done."
    refused = [e for e in await env.store.list_audit(limit=100) if e.action == "answer_refused"]
    assert sorted(str(e.actor_id) for e in refused) == sorted([ALICE.aad, STRANGER.aad])
