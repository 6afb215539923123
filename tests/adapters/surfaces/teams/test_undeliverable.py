"""A request whose card the Bot Connector will not post settles as undeliverable at once.

The fake connector refuses the posts (503, then 403 for good); the model is told the person
could not be reached, and the audit log says why, long before the request's deadline.
"""

from __future__ import annotations

import json
import time

from bot.records import RequestStatus
from tests.adapters.surfaces.teams.conftest import StartEnv
from tests.fakes.anthropic_api import reply_text, reply_tool_use

FINAL = "I could not reach you, so I did not deploy."
DEADLINE = 60  # seconds: the request must settle long before this
SOON = 10.0


async def test_a_card_the_connector_refuses_is_undeliverable_at_once(
    start_env: StartEnv,
) -> None:
    env = await start_env(HITL_TIMEOUT_SECONDS=DEADLINE)
    env.connector.fail_next("POST", 503, times=1)  # retried
    env.connector.fail_next("POST", 403, times=20)  # not: the bot may not post here
    approval = {"action": "Deploy v2 to production", "reason": "Release day"}
    env.model.script(reply_tool_use("requestApproval", approval), reply_text(FINAL))
    started = time.monotonic()
    await env.say("deploy v2 please")

    def told_final() -> bool:
        return any(c.body.get("text") == FINAL for c in env.connector.calls_to("POST"))

    await env.connector.wait_for(told_final, SOON)
    assert time.monotonic() - started < SOON
    assert len(env.requests) == 2

    result = env.tool_result(2)
    assert result["is_error"] is True
    error = json.loads(result["content"])["error"]
    assert "could not be reached" in error
    assert "HTTP 403" in error
    assert "timed out" not in error

    record = await env.store.request_for_tool_call(result["tool_use_id"])
    assert record is not None
    assert record.status is RequestStatus.UNDELIVERABLE
    actions = {entry.action: entry for entry in await env.store.list_audit(request_id=record.id)}
    assert "HTTP 403" in actions["request.undeliverable"].detail["reason"]
