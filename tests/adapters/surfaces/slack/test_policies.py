"""A policy file end to end in Slack (HITL_POLICY_FILE): who may answer is its rule's, checked
at click time; a group's members read through Slack (usergroups.users.list); the actor
refused under `allow_self: false`; a group that cannot be read lets nobody in, and says so;
two approvals of a group's members, the message showing the tally between them; a rule's
default answer at its deadline (`on_timeout`), read by the model as expired."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bot.errors import ConfigurationError
from bot.records import RequestStatus
from tests.adapters.surfaces.slack.conftest import (
    ALICE,
    CHANNEL,
    JSON,
    STRANGER,
    WAIT,
    Env,
    StartEnv,
    has_actions,
)
from tests.adapters.surfaces.slack.test_e2e import answered_by, finish, start_turn

BOB = "U0BOB00001"  # named in the rule
CAROL = "U0CAROL001"  # in the ops group
OPS = "S0OPSTEAM"
DBAS = "S0DBATEAM"  # Bob and Carol
POLICY = f"""\
rules:
  - match: {{tool: requestApproval, arguments: {{action: Drop the database}}}}
    approvers: [slack:{DBAS}]
    required: 2
  - match: {{tool: requestApproval, arguments: {{action: Deploy to production}}}}
    approvers: [slack:{OPS}, slack:{BOB}]
    allow_self: false
  - match: {{tool: requestApproval, arguments: {{action: Rotate keys}}}}
    approvers: [slack:S0NOSUCH1]
  - match: {{tool: confirmAction}}
    approvers: [actor]
    timeout_seconds: 1
  - match: {{tool: requestApproval, arguments: {{action: Restart the cache}}}}
    approvers: [actor]
    timeout_seconds: 1
    on_timeout: {{answer: {{approved: false, reason: nobody answered}}}}
  - match: {{tool: "*"}}
    approvers: [actor]
"""


async def served(start_env: StartEnv, tmp_path: Path) -> Env:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    for user, name in ((BOB, "bob"), (CAROL, "carol")):
        env.slack.add_user(user, name)
    env.slack.add_usergroup(OPS, [CAROL, ALICE])  # Alice is in ops too: still not for her own
    env.slack.add_usergroup(DBAS, [BOB, CAROL])
    return env


async def notice_to(env: Env, user: str, count: int) -> str:
    """The `count`-th ephemeral so far, which must be `user`'s."""
    await env.slack.wait_for(lambda: len(env.slack.ephemerals) >= count, WAIT)
    told = env.slack.ephemerals[count - 1]
    assert told["user"] == user
    return str(told["text"])


async def test_the_rule_decides_who_may_answer(start_env: StartEnv, tmp_path: Path) -> None:
    env = await served(start_env, tmp_path)
    deploy = {"action": "Deploy to production", "reason": "v2"}
    whom = f"Asked by <@{ALICE}>. Approvers: <!subteam^{OPS}>, <@{BOB}>. Expires "
    thread, message = await start_turn(env, "requestApproval", deploy, whom=whom)
    await env.click(message, "hitl_approve", user=STRANGER)
    assert await notice_to(env, STRANGER, 1) == (
        f"Only the group slack:{OPS} or <@{BOB}> may answer this request."
    )
    await env.click(message, "hitl_approve")  # Alice asked: four-eyes
    assert await notice_to(env, ALICE, 2) == (
        "This needs someone other than you to answer: you asked for it."
    )
    await env.click(message, "hitl_approve", user=CAROL)  # a member of the group
    result = await finish(env, thread, message, answered_by(CAROL))
    assert json.loads(result["content"]) == {"approved": True}
    refused = [e for e in await env.store.list_audit(limit=100) if e.action == "answer_refused"]
    assert sorted(str(e.actor_id) for e in refused) == sorted([STRANGER, ALICE])
    assert env.slack.calls_to("usergroups.users.list")  # read through Slack


async def test_a_group_that_cannot_be_read_lets_nobody_in(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    rotate = {"action": "Rotate keys", "reason": "x"}
    whom = "Approvers: <!subteam^S0NOSUCH1>."
    _, message = await start_turn(env, "requestApproval", rotate, whom=whom)
    await env.click(message, "hitl_approve", user=BOB)
    said = await notice_to(env, BOB, 1)
    assert said.startswith("The members of slack:S0NOSUCH1 cannot be read: ")
    assert "no_such_subteam" in said and said.endswith("until it can be read.")


async def test_a_wrong_policy_file_stops_serve_in_one_line(
    start_env: StartEnv, tmp_path: Path
) -> None:
    policy = tmp_path / "policy.yaml"
    policy.write_text("rules:\n  - match: {tool: deploy}\n    approvers: [bob]\n")
    with pytest.raises(ConfigurationError) as failed:
        await start_env(HITL_POLICY_FILE=str(policy))
    said: Any = str(failed.value)
    assert said.startswith(f"{policy}:3: rules[0].approvers[0]: ") and "\n" not in said


@pytest.mark.slow  # its deadline passes
async def test_a_rule_s_deadline_is_the_request_s(start_env: StartEnv, tmp_path: Path) -> None:
    env = await served(start_env, tmp_path)  # HITL_TIMEOUT_SECONDS is 30 here
    confirm = {"title": "Drop the cache?", "message": "All of it", "severity": "warning"}
    thread, message = await start_turn(env, "confirmAction", confirm)
    record = await env.request_record(message)
    assert record.expires_at is not None
    assert (record.expires_at - record.created_at).total_seconds() == pytest.approx(1, abs=0.01)
    await thread.settled(message, "Expired")


@pytest.mark.slow  # its deadline passes
async def test_at_the_deadline_the_rule_s_default_answer_applies_as_expired(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    restart = {"action": "Restart the cache", "reason": "it is slow"}
    thread, message = await start_turn(env, "requestApproval", restart)
    result = await finish(env, thread, message, "Expired: the policy's default answer applied.")
    assert json.loads(result["content"]) == {
        "approved": False, "reason": "nobody answered", "expired": True,
    }  # fmt: skip
    record = await env.request_record(message)
    assert record.status is RequestStatus.TIMED_OUT and record.settled_by is None
    endings = [(e.action, e.actor_id) for e in await env.store.list_audit(request_id=record.id)
               if e.action not in ("request.created", "request.delivered")]  # fmt: skip
    assert endings == [("request.timed_out", None)]  # expired, nobody's "no"


async def test_two_approvals_with_the_tally_shown_between_them(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    drop = {"action": "Drop the database", "reason": "decommissioned"}
    whom = f"Asked by <@{ALICE}>. Approvers: <!subteam^{DBAS}>. Expires "
    thread, message = await start_turn(env, "requestApproval", drop, whom=whom)
    posted = len(env.slack.calls_to("chat.postMessage"))
    await env.click(message, "hitl_approve", user=BOB)
    tally = f"1 of 2 approvals: <@{BOB}>"

    def voted() -> JSON:
        current = env.slack.message(CHANNEL, message["ts"])
        return current if tally in json.dumps(current["blocks"]) else {}

    shown = await env.slack.wait_for(voted, WAIT)
    assert has_actions(shown)  # still open: Carol, or anyone else of the group, may approve
    assert len(env.slack.calls_to("chat.postMessage")) == posted  # the message edited, only
    await env.click(message, "hitl_approve", user=BOB)  # Bob again
    assert await notice_to(env, BOB, 1) == f"You voted already: {tally}."
    await env.click(message, "hitl_approve", user=CAROL)
    result = await finish(env, thread, message, f"Answered by <@{BOB}> and <@{CAROL}>")
    assert json.loads(result["content"]) == {"approved": True, "approved_by": [BOB, CAROL]}
    votes = [e.actor_id for e in await env.store.list_audit(limit=100) if e.action == "vote.cast"]
    assert sorted(str(voter) for voter in votes) == sorted([BOB, CAROL])
