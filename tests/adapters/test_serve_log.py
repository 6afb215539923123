"""What the real `hitl-bridge serve` logs by default: one INFO line at start saying what it
serves, one INFO line per request asked and settled, and never a secret; and, with nothing to
serve, which variables would give it something."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.adapters.test_cli import hitl
from tests.adapters.workers import ALICE, SECRET, Cluster, api_key, cluster, eventually
from tests.fakes.anthropic_api import reply_text, reply_tool_use

pytestmark = pytest.mark.subprocess  # `hitl-bridge serve` runs as worker processes

ADMIN_TOKEN = "admin-token-not-to-be-logged-0123456789"


@pytest.fixture
async def sqlite(tmp_path: Path) -> AsyncIterator[Cluster]:
    async with cluster(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}", tmp_path) as running:
        yield running


async def test_serve_logs_its_start_and_each_request_at_info(sqlite: Cluster) -> None:
    c = sqlite
    c.model.script(
        reply_tool_use("requestApproval", {"action": "Deploy v2", "reason": "Release day"}),
        reply_text("Done."),
    )
    worker = await c.start_worker("one", HITL_ADMIN_TOKEN=ADMIN_TOKEN)
    thread = await c.mention(worker, "deploy v2")
    message, record = await thread.posted()
    await c.click(worker, message, "hitl_approve")
    await thread.reply("Done.")
    answered = f"request {record.id} requestApproval: answered by {ALICE} after "
    await eventually(lambda: answered in worker.log(), "the answer logged")

    lines = worker.log().splitlines()
    (start,) = [line for line in lines if "serving on" in line]
    assert re.search(
        r" INFO adapters\.serve: hitl-bridge serving on http://127\.0\.0\.1:\d+ "
        r"\(Slack \(HTTP /slack/events\); doors: API /api/v1, MCP /mcp, A2A /a2a, "
        r"admin console /admin; "
        rf"database {re.escape(c.db_url)}; worker \S+:{worker.pid}:\S+\)$",
        start,
    ), start
    asked = f"request {record.id} requestApproval: asked for {ALICE} in {thread.room_id}"
    said = [line.partition(" INFO ")[2] for line in lines if f"request {record.id}" in line]
    assert len(said) == 2, said  # asked, answered: nothing for the edits in between
    assert said[0] == f"bot.human_input.log_lines: {asked}"
    assert re.fullmatch(rf"bot\.human_input\.log_lines: {re.escape(answered)}\d+\.\ds", said[1])
    for secret in (c.slack.token, SECRET, api_key("one"), ADMIN_TOKEN):
        assert secret not in worker.log()


def test_serve_with_nothing_to_serve_names_slack_s_and_teams_variables(
    tmp_path: Path,
) -> None:
    done = hitl(tmp_path, "serve", HITL_MODEL="scripted",
                HITL_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}")  # fmt: skip
    assert done.returncode == 2, done.stderr
    (line,) = done.stderr.splitlines()
    for named in ("SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET", "TEAMS_CLIENT_ID and "
                  "TEAMS_CLIENT_SECRET", "`hitl-bridge demo`"):  # fmt: skip
        assert named in line
