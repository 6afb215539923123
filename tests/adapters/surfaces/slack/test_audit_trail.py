"""A request's audit rows end to end in Slack (signed payloads, the fake Web API): what was
asked (the tool, the arguments as shown, who asked, the room), where it was delivered (the
surface and the message, with its link), a refused click, each vote, and the answer (by
whom: the platform id, the display name and the surface), in order, in one hash chain."""

from __future__ import annotations

import json
from pathlib import Path

from bot.audit.chain import seal_chain, verify_chain
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, STRANGER, StartEnv
from tests.adapters.surfaces.slack.test_e2e import finish, start_turn
from tests.adapters.surfaces.slack.test_votes import BOB, CAROL, WHOM, served, tallied
from tests.fakes.slack_api import TEAM_DOMAIN

DEPLOY = {"action": "Deploy v2", "reason": "Release day"}


async def test_every_step_of_a_request_is_a_row_of_the_chain(
    start_env: StartEnv, tmp_path: Path
) -> None:
    env = await served(start_env, tmp_path)  # two of Bob, Carol and Dave must approve
    thread, message = await start_turn(env, "requestApproval", DEPLOY, whom=WHOM)
    record = await env.request_record(message)
    await env.click(message, "hitl_approve", user=STRANGER)
    await env.click(message, "hitl_approve", user=BOB)
    await tallied(env, message)
    await env.click(message, "hitl_approve", user=CAROL, user_name="carol.chen")
    await finish(env, thread, message, f"Answered by <@{BOB}> and <@{CAROL}>")

    rows = list(reversed(await env.store.list_audit(request_id=record.id)))
    assert [(e.action, e.actor_id) for e in rows] == [
        ("request.created", ALICE), ("request.delivered", None), ("answer_refused", STRANGER),
        ("vote.cast", BOB), ("vote.cast", CAROL), ("request.resolved", CAROL),
    ]  # fmt: skip
    created, delivered, refused, bob, _, resolved = (e.detail for e in rows)
    assert created["tool_name"] == "requestApproval" and created["arguments"] == DEPLOY
    assert created["room_id"] == f"slack:{CHANNEL}:{thread.ts}"
    assert created["surface"] == "slack"
    link = (f"https://{TEAM_DOMAIN}.slack.com/archives/{CHANNEL}/p{message['ts'].replace('.', '')}"
            f"?thread_ts={thread.ts}&cid={CHANNEL}")  # fmt: skip
    where = {"channel": CHANNEL, "ts": message["ts"], "link": link}
    assert delivered == {"surface": "slack", "ref": where}
    assert refused["surface"] == "slack"
    assert bob["approve"] is True and bob["surface"] == "slack"
    assert resolved["surface"] == "slack" and resolved["name"] == "carol.chen"
    assert json.loads(resolved["result"]) == {"approved": True, "approved_by": [BOB, CAROL]}
    await seal_chain(env.store)
    assert (await verify_chain(env.store)).intact
