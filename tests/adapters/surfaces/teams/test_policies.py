"""A policy file on Teams: the rule decides who may answer a card, checked at the invoke; the
actor refused under `allow_self: false`; a group that cannot be read (an Entra group, with no
Microsoft Graph credentials here) lets nobody in and says so; admins may answer. A rule's
default answer at its deadline (`on_timeout`) is read by the model as expired, and the
request is recorded as expired (answered by nobody), never as a person's no. An Entra group
read from Microsoft Graph (EntraGroups over HTTP against a fake Graph on loopback, added to the
running service's directory with a token of the test's: the Teams SDK's MSAL sign-in is not
played here, test_groups.py covers the App's credentials): its member answers, a non-member is
refused, and so is the actor, a member too, under `allow_self: false`."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from adapters.surfaces.teams.groups import EntraGroups
from bot.records import RequestStatus
from tests.adapters.surfaces.teams.conftest import (
    ADMIN,
    ALICE,
    BOB,
    CAROL,
    GROUP,
    JSON,
    STRANGER,
    WAIT,
    StartEnv,
    User,
    is_live,
    request_id_of,
    text_of,
)
from tests.adapters.surfaces.teams.test_e2e import FINAL, assert_settled_reply, finish, start_turn
from tests.adapters.surfaces.teams.test_groups import TOKEN, FakeGraph
from tests.fakes.anthropic_api import reply_text, reply_tool_use

ENTRA = "3f2c9a4e-6b1d-4e8a-9c7f-2d5b8e1a0c64"
OPS = "6f1c3f5e-0000-4000-8000-0000000000a1"  # an Entra group Graph can read
DAVE = User("0da40000-0000-4000-8000-000000000da4", "29:1dave-bf-id", "Dave Diaz")
POLICY = f"""\
rules:
  - match: {{tool: requestApproval, arguments: {{action: Deploy to production}}}}
    approvers: [entra:{OPS}]
    allow_self: false
  - match: {{tool: requestApproval, arguments: {{action: Restart the cache}}}}
    approvers: [actor]
    timeout_seconds: 1
    on_timeout: {{answer: {{approved: false, reason: nobody answered}}}}
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


@pytest.mark.slow  # its deadline passes
async def test_at_the_deadline_the_rule_s_default_answer_applies_as_expired(
    start_env: StartEnv, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    restart = {"action": "Restart the cache", "reason": "it is slow"}
    chat, activity_id, card = await start_turn(env, "requestApproval", restart)
    request_id = request_id_of(card)

    expired = "Expired: the policy's default answer applied."
    result = await finish(env, chat, activity_id, expired)
    assert "is_error" not in result  # an answer, marked as nobody's
    assert json.loads(result["content"]) == {
        "approved": False, "reason": "nobody answered", "expired": True,
    }  # fmt: skip
    record = await env.record(request_id)
    assert record.status is RequestStatus.TIMED_OUT and record.settled_by is None
    (ended,) = [e for e in await env.store.list_audit(request_id=request_id)
                if e.action.startswith("request.") and e.action not in (
                    "request.created", "request.delivered")]  # fmt: skip
    assert ended.action == "request.timed_out" and ended.actor_id is None
    late = await chat.invoke("hitl_approve", request_id)  # Alice, too late
    assert "expired" in text_of(assert_settled_reply(late, expired))


async def test_an_entra_group_s_member_answers_and_a_non_member_is_refused(
    start_env: StartEnv, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    assert env.server.service.teams is not None
    directory = env.server.service.teams.router.deciders.directory
    assert directory is not None
    async with FakeGraph() as graph, httpx.AsyncClient() as http:
        graph.groups[OPS] = [CAROL.aad, ALICE.aad, "aad-user-3"]

        async def token() -> str:
            return TOKEN

        directory.add("entra:", EntraGroups(token, http, graph_url=graph.url))
        deploy = {"action": "Deploy to production", "reason": "v2"}
        whom = f"Asked by {ALICE.name}. Approvers: entra:{OPS}. Expires "
        chat, activity_id, card = await start_turn(env, "requestApproval", deploy, whom=whom)
        request_id = request_id_of(card)

        stranger = (await chat.invoke("hitl_approve", request_id, user=STRANGER)).card
        assert f"Only the group entra:{OPS} may answer this request." in text_of(stranger)
        assert not is_live(stranger)
        own = (await chat.invoke("hitl_approve", request_id)).card  # Alice: a member, and asked
        assert "someone other than you" in text_of(own) and not is_live(own)
        live = (await chat.invoke("hitl_refresh", request_id, user=CAROL)).card
        assert is_live(live)
        answered = f"Answered by {CAROL.name}"
        assert_settled_reply(await chat.invoke("hitl_approve", request_id, user=CAROL), answered)
        result = await finish(env, chat, activity_id, answered)
        assert json.loads(result["content"]) == {"approved": True}
        asked = {path for path, _, _ in graph.requests}
        assert asked == {f"/v1.0/groups/{OPS}/transitiveMembers/microsoft.graph.user"}
    record = await env.record(request_id)
    assert (record.status, record.settled_by) == (RequestStatus.RESOLVED, CAROL.aad)
    refused = [e for e in await env.store.list_audit(request_id=request_id)
               if e.action == "answer_refused"]  # fmt: skip
    assert sorted(str(e.actor_id) for e in refused) == sorted([STRANGER.aad, ALICE.aad])


REFRESHED = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [teams:{BOB.aad}, entra:{OPS}]
    timeout_seconds: 30
    escalate:
      - {{after_seconds: 0.3, approvers: [teams:{DAVE.aad}]}}
"""


async def test_the_rule_s_approvers_and_group_members_get_the_live_card(
    start_env: StartEnv, tmp_path: Path
) -> None:
    """The card's refresh list names the rule's Teams users and its Entra group's members,
    then whom its escalation added, each found in the conversation's roster (by AAD object
    id: the bridge had not heard from them); a member not in the conversation is left out."""
    policy = tmp_path / "policy.yaml"
    policy.write_text(REFRESHED)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    for person in (BOB, CAROL, DAVE):
        env.connector.add_member(GROUP, person.account)
    directory = env.server.service.teams.router.deciders.directory  # type: ignore[union-attr]
    assert directory is not None
    async with FakeGraph() as graph, httpx.AsyncClient() as http:
        graph.groups[OPS] = [CAROL.aad, "0e5e0000-0000-4000-8000-0000000000e5"]  # one elsewhere

        async def token() -> str:
            return TOKEN

        directory.add("entra:", EntraGroups(token, http, graph_url=graph.url))
        deploy = {"action": "Deploy v2", "reason": "Release day"}
        whom = f"Asked by {ALICE.name}. Approvers: {BOB.name}, entra:{OPS}. Expires "
        chat, activity_id, card = await start_turn(
            env, "requestApproval", deploy, conversation_id=GROUP, user_ids=3, whom=whom
        )
        assert card["refresh"]["userIds"] == [ALICE.id, BOB.id, CAROL.id]
        looked_up = {member for _, member in env.connector.member_lookups}
        assert {BOB.aad, CAROL.aad, "0e5e0000-0000-4000-8000-0000000000e5"} <= looked_up

        def escalated() -> JSON:
            current = chat.card(activity_id)
            return current if DAVE.id in current.get("refresh", {}).get("userIds", []) else {}

        current = await env.connector.wait_for(escalated, WAIT)
        assert current["refresh"]["userIds"] == [ALICE.id, BOB.id, CAROL.id, DAVE.id]
        assert f"Escalated after 0.3 s to {DAVE.name}." in text_of(current)

        request_id = request_id_of(card)
        automatic = await chat.invoke("hitl_refresh", request_id, user=CAROL, trigger="automatic")
        assert is_live(automatic.card)
        answered = f"Answered by {CAROL.name}"
        assert_settled_reply(await chat.invoke("hitl_approve", request_id, user=CAROL), answered)
        settled = await chat.settled(activity_id, answered)
    assert "refresh" not in settled and not is_live(settled)
    assert await chat.reply(2) == FINAL  # after the escalation's own message
    assert json.loads(env.tool_result(2)["content"]) == {"approved": True}
