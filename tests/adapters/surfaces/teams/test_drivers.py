"""A policy's `drivers` on Teams: in the conversations it names, only its users (AAD object
ids) start the agent's turns; anyone else gets a short reply in the conversation (Teams has no
message only they would see there) and the refusal is audited (`turn_refused`); an Entra group
that cannot be read (no Graph credentials here) lets nobody in through it, and says so."""

from __future__ import annotations

from pathlib import Path

from tests.adapters.surfaces.teams.conftest import CHANNEL, PERSONAL, STRANGER, StartEnv, User
from tests.fakes.anthropic_api import reply_text

DRIVER = User("7a1c3e5f-0b2d-4f6a-8c9e-1d3f5b7a9c0e", "29:1dana-bf-id", "Dana Driver")
ENTRA = "3f2c9a4e-6b1d-4e8a-9c7f-2d5b8e1a0c64"
POLICY = f"""\
rules:
  - match: {{tool: "*"}}
    approvers: [actor]
drivers:
  - room: "teams:{CHANNEL}*"
    users: [teams:{DRIVER.aad}, entra:{ENTRA}]
"""


async def test_only_drivers_drive_the_agent_in_the_channel(
    start_env: StartEnv, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    env.model.script(reply_text("Hello Dana."), reply_text("Hello in private."))

    refused = await env.say("deploy everything", conversation_id=CHANNEL, user=STRANGER)
    notice = await refused.reply()
    assert notice.startswith(f"The members of entra:{ENTRA} cannot be read")
    assert notice.endswith("nobody can drive the agent here through it until it can be read.")
    (entry,) = [e for e in await env.store.list_audit() if e.action == "turn_refused"]
    assert entry.actor_id == STRANGER.aad
    assert entry.detail["surface"] == "teams" and entry.detail["room"] == refused.room_id
    assert env.model.requests == []

    dana = await env.say("hello", conversation_id=CHANNEL, user=DRIVER)
    assert await dana.reply() == "Hello Dana."
    # A personal chat is no room the drivers name: anyone's, as without a policy.
    private = await env.say("hello", conversation_id=PERSONAL, user=STRANGER)
    assert await private.reply() == "Hello in private."
    assert len(env.model.requests) == 2
    assert len([e for e in await env.store.list_audit() if e.action == "turn_refused"]) == 1
