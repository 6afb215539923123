"""M-of-N end to end in Slack (HITL_POLICY_FILE, `required: 2` of three approvers): the
message shows the live tally between the votes and settles at the second approval, the answer
naming both while the third approver's click comes too late; and one decline among the
approvals declines the request, the decliner's reason reaching the model."""

from __future__ import annotations

import json
from pathlib import Path

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
from tests.adapters.surfaces.slack.test_e2e import finish, start_turn
from tests.adapters.surfaces.slack.test_policies import notice_to

BOB, CAROL, DAVE = "U0BOB00001", "U0CAROL001", "U0DAVE0001"
POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [slack:{BOB}, slack:{CAROL}, slack:{DAVE}]
    required: 2
  - match: {{tool: "*"}}
    approvers: [actor]
"""
WHOM = f"Asked by <@{ALICE}>. Approvers: <@{BOB}>, <@{CAROL}>, <@{DAVE}>. Expires "
TALLY = f"1 of 2 approvals: <@{BOB}>"


async def served(start_env: StartEnv, tmp_path: Path) -> Env:
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    env = await start_env(HITL_POLICY_FILE=str(policy))
    for user, name in ((BOB, "bob"), (CAROL, "carol"), (DAVE, "dave")):
        env.slack.add_user(user, name)
    return env


async def tallied(env: Env, message: JSON) -> JSON:
    """The request's message once edited to show Bob's vote, still open."""

    def shown() -> JSON:
        current = env.slack.message(CHANNEL, message["ts"])
        live = has_actions(current) and TALLY in json.dumps(current["blocks"])
        return current if live else {}

    return await env.slack.wait_for(shown, WAIT)


async def votes_cast(env: Env, request_id: str) -> list[tuple[str | None, bool]]:
    audit = await env.store.list_audit(request_id=request_id)
    return [(e.actor_id, e.detail["approve"]) for e in reversed(audit) if e.action == "vote.cast"]


async def test_two_of_three_approve_with_the_live_tally(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)
    deploy = {"action": "Deploy v2", "reason": "Release day"}
    thread, message = await start_turn(env, "requestApproval", deploy, whom=WHOM)
    record = await env.request_record(message)
    await env.click(message, "hitl_approve", user=STRANGER)  # not among the three
    assert await notice_to(env, STRANGER, 1) == (
        f"Only <@{BOB}>, <@{CAROL}> or <@{DAVE}> may answer this request."
    )

    await env.click(message, "hitl_approve", user=BOB)
    shown = await tallied(env, message)
    assert WHOM in json.dumps(shown["blocks"])  # still naming who may answer
    pending = await env.store.get_request(record.id)
    assert pending is not None and pending.status is RequestStatus.PENDING

    await env.click(message, "hitl_approve", user=CAROL)
    result = await finish(env, thread, message, f"Answered by <@{BOB}> and <@{CAROL}>")
    assert json.loads(result["content"]) == {"approved": True, "approved_by": [BOB, CAROL]}

    await env.click(message, "hitl_approve", user=DAVE)  # the third: too late
    assert (await notice_to(env, DAVE, 2)).startswith("This request was already answered")
    assert await votes_cast(env, record.id) == [(BOB, True), (CAROL, True)]
    settled = await env.store.get_request(record.id)
    assert settled is not None and settled.status is RequestStatus.RESOLVED


async def test_a_decline_among_the_approvals_declines(start_env: StartEnv, tmp_path: Path) -> None:
    env = await served(start_env, tmp_path)
    deploy = {"action": "Deploy v2", "reason": "Release day"}
    thread, message = await start_turn(env, "requestApproval", deploy, whom=WHOM)
    record = await env.request_record(message)
    await env.click(message, "hitl_approve", user=BOB)
    await tallied(env, message)

    click = env.click_payload(message, "hitl_decline", user=CAROL)
    assert (await env.post(click)).status == 200
    view = await env.modal()
    assert view["callback_id"] == "hitl_modal:decline"
    assert await env.submit(view, {"reason": {"reason": "Not on a Friday"}}, user=CAROL) == {}

    result = await finish(env, thread, message, f"Declined by <@{CAROL}>")
    assert result["is_error"] is True
    assert "Not on a Friday" in result["content"]
    settled = await env.store.get_request(record.id)
    assert settled is not None
    assert (settled.status, settled.settled_by) == (RequestStatus.REJECTED, CAROL)
    assert await votes_cast(env, record.id) == [(BOB, True), (CAROL, False)]
    shown = json.dumps(env.slack.message(CHANNEL, message["ts"])["blocks"])
    assert "Not on a Friday" in shown and TALLY not in shown  # the outcome, no tally left
