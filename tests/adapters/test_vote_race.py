"""A tally drawn on one worker that reaches Slack after the request's ending drawn on another:
two real `hitl-bridge serve` processes (tests/adapters/workers.py) on one PostgreSQL database.

Bob's approval reaches worker B, which draws the tally ("1 of 2 approvals"); FakeSlack holds
that chat.update. Carol's approval reaches worker A, which settles the request and draws its
ending. Only then is B's edit let through, so it lands last, as a slow network could make it.
B then finds the request ended in the store and draws its ending again: the message ends
settled, without controls, never showing the open tally of an answered request.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.workers import (
    CHANNEL,
    POSTGRES_URL_ENV,
    WAIT,
    Cluster,
    cluster,
    has_actions,
    postgres_database,
)
from tests.fakes.anthropic_api import reply_text, reply_tool_use

pytestmark = pytest.mark.subprocess  # `hitl-bridge serve` runs as worker processes

BOB = "U0BOB00001"
CAROL = "U0CAROL001"
FINAL = "All done, thanks."
TALLY = f"1 of 2 approvals: <@{BOB}>"
POLICY = f"""\
rules:
  - match: {{tool: requestApproval}}
    approvers: [slack:{BOB}, slack:{CAROL}]
    required: 2
"""


@pytest.fixture
async def postgres(tmp_path: Path) -> AsyncIterator[Cluster]:
    server = os.environ.get(POSTGRES_URL_ENV)
    if not server:
        pytest.skip(f"{POSTGRES_URL_ENV} is not set")
    async with postgres_database(server) as url, cluster(url, tmp_path) as running:
        running.slack.add_user(BOB, "bob")
        running.slack.add_user(CAROL, "carol")
        yield running


def tallied(args: dict[str, object]) -> bool:
    return TALLY in json.dumps(args.get("blocks"))


async def test_a_tally_edit_landing_after_the_ending_is_drawn_over(
    postgres: Cluster, tmp_path: Path
) -> None:
    c = postgres
    policy = tmp_path / "policy.yaml"
    policy.write_text(POLICY)
    approval = {"action": "Deploy v2", "reason": "Release day"}
    c.model.script(reply_tool_use("requestApproval", approval, id="toolu_v1"), reply_text(FINAL))
    a = await c.start_worker("a", HITL_POLICY_FILE=str(policy))
    b = await c.start_worker("b", HITL_POLICY_FILE=str(policy))
    thread = await c.mention(a, "deploy v2")
    message, _ = await thread.posted()

    released = c.slack.hold("chat.update", tallied)
    await c.click(b, message, "hitl_approve", user=BOB)
    await c.slack.wait_for(lambda: c.slack.held, WAIT)  # B's tally, waiting at Slack
    await c.click(a, message, "hitl_approve", user=CAROL)
    answered = f"Answered by <@{BOB}> and <@{CAROL}>"
    await thread.settled(message, answered)  # A's ending, shown first
    ended_at = len(thread.versions(message))

    released.set()  # B's tally lands now, over the ending

    def late_tally_landed() -> bool:
        return any(tallied(v) for v in thread.versions(message)[ended_at:])

    await c.slack.wait_for(late_tally_landed, WAIT)
    final = await thread.settled(message, answered)  # and the ending is drawn over it
    assert not has_actions(final) and TALLY not in json.dumps(final["blocks"])
    shown = [has_actions(v) for v in thread.versions(message)]
    assert shown[-1] is False and shown[ended_at] is True  # the late tally, then the ending
    await thread.reply(FINAL)
    live = [m["ts"] for m in thread.bot_messages() if has_actions(m) and not thread.streamed(m)]
    assert live == []  # but the streamed reply's Stop button
    assert c.slack.message(CHANNEL, message["ts"]) == final
