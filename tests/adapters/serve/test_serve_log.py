"""What the real `hitl-bridge serve` logs: one INFO line at start saying what it serves, one INFO
line per request asked and settled, as text (the default) or one JSON object a line with the
same fields (HITL_LOG_FORMAT=json), and never a secret, token or signature, whatever it was
sent; and, with nothing to serve, which variables would give it something."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.cli.test_command import hitl
from tests.adapters.doors.admin.test_console_http import csrf_of
from tests.adapters.workers import (
    ALICE,
    CHANNEL,
    SECRET,
    WAIT,
    Cluster,
    Worker,
    api_key,
    cluster,
    eventually,
)
from tests.fakes.anthropic_api import reply_text, reply_tool_use
from tests.fakes.slack_signing import encode, event_callback, message_event, sign

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
        r" INFO adapters\.serve\.service: hitl-bridge serving on http://127\.0\.0\.1:\d+ "
        r"\(version [\w.]+; Slack \(HTTP /slack/events\); "
        r"doors: API /api/v1, MCP /mcp, A2A /a2a, admin console /admin; "
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


class Hook:
    """A webhook receiver on loopback: what it was sent, and an event once it was."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        self.arrived = asyncio.Event()

    async def handle(self, request: web.Request) -> web.Response:
        self.received.append((dict(request.headers), await request.read()))
        self.arrived.set()
        return web.Response(status=204)


@pytest.fixture
async def hook() -> AsyncIterator[tuple[Hook, str]]:
    made = Hook()
    app = web.Application()
    app.router.add_post("/hook", made.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        yield made, f"http://{host}:{port}/hook"
    finally:
        await runner.cleanup()


async def sign_in(worker: Worker, token: str) -> int:
    """The admin console's sign-in with `token`: its status (303 signed in, 401 refused)."""
    jar = aiohttp.CookieJar(unsafe=True)  # keep cookies of 127.0.0.1, as a browser does
    async with aiohttp.ClientSession(cookie_jar=jar) as session:
        async with session.get(f"{worker.url}/admin/signin") as form:
            csrf = csrf_of(await form.text())
        data = {"csrf": csrf, "token": token}
        url = f"{worker.url}/admin/signin"
        async with session.post(url, data=data, allow_redirects=False) as signed:
            return signed.status


async def round_trip(c: Cluster, worker: Worker, url: str, plain: str) -> tuple[str, list[str]]:
    """A request made on the API with a callback, posted in Slack, answered by a click, its
    webhook sent; then a forged Slack signature, a refused API token, the admin console
    signed in to with a wrong and the right token. Returns the request's id and the values
    sent that were not secrets of the service but must not be logged either."""
    bearer = {"Authorization": f"Bearer {plain}"}
    body = {"tool": "requestApproval", "to": f"slack:{CHANNEL}/{ALICE}", "callback_url": url,
            "arguments": {"action": "Deploy v2", "reason": "Release day"}}  # fmt: skip
    async with c.http.post(f"{worker.url}/api/v1/requests", json=body, headers=bearer) as made:
        assert made.status == 201, await made.text()
        request_id = str((await made.json())["id"])

    async def posted() -> dict[str, Any] | None:
        record = await c.store.get_request(request_id)
        ref = record.message_refs.get("slack") if record is not None else None
        return c.slack.message(ref["channel"], ref["ts"]) if ref else None

    await c.click(worker, await eventually(posted, "the request posted in Slack"), "hitl_approve")

    forged_with = "not-the-signing-secret-0123456789"
    raw, content_type = encode(event_callback(message_event("hi", user=ALICE, channel=CHANNEL)))
    forged = sign(raw, forged_with)
    headers = {"Content-Type": content_type, **forged}
    async with c.http.post(worker.events_url, data=raw, headers=headers) as refused:
        assert refused.status == 401, await refused.text()
    wrong_token = "hitl_" + "w" * 43  # shaped like a token, made by nobody
    wrong = {"Authorization": f"Bearer {wrong_token}"}
    async with c.http.get(f"{worker.url}/api/v1/requests", headers=wrong) as refused:
        assert refused.status == 401, await refused.text()
    wrong_admin = "not-the-admin-token-0123456789"
    assert await sign_in(worker, wrong_admin) == 401
    assert await sign_in(worker, ADMIN_TOKEN) == 303
    return request_id, [forged_with, forged["X-Slack-Signature"], wrong_token, wrong_admin]


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_no_secret_token_or_signature_reaches_a_log_line(
    sqlite: Cluster, hook: tuple[Hook, str], log_format: str
) -> None:
    c, (received, url) = sqlite, hook
    c.slack.channels.add(CHANNEL)  # the API checks where it is asked to post
    plain, token = await Tokens(DoorTables(c.store)).create("ci-agent")
    worker = await c.start_worker(
        "one", HITL_ADMIN_TOKEN=ADMIN_TOKEN, HITL_WEBHOOK_ALLOW_PRIVATE=1,
        HITL_LOG_FORMAT=log_format, HITL_LOG_LEVEL="DEBUG",  # every line of ours
    )  # fmt: skip
    request_id, sent = await round_trip(c, worker, url, plain)
    await asyncio.wait_for(received.arrived.wait(), WAIT)
    ((delivered, _),) = received.received
    assert await c.terminate(worker, WAIT) == 0  # its last lines written

    log = worker.log()
    secrets = [c.slack.token, SECRET, api_key("one"), ADMIN_TOKEN, plain, token.webhook_secret,
               delivered["X-Hitl-Signature"], *sent]  # fmt: skip
    assert [secret for secret in secrets if secret in log] == []
    lines = log.splitlines()
    if log_format == "text":
        starts = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ \S+: ")
        assert all(starts.match(line) or line.startswith("  ") for line in lines), log
        return
    records = [json.loads(line) for line in lines]  # each line one object
    assert all({"timestamp", "level", "logger", "message"} <= set(r) for r in records)
    (start,) = [r for r in records if r["message"].startswith("hitl-bridge serving on")]
    assert start["url"] == worker.url and start["database"] == c.db_url
    assert start["surfaces"] == ["Slack (HTTP /slack/events)"] and start["worker"]
    assert start["doors"] == ["API /api/v1", "MCP /mcp", "A2A /a2a", "admin console /admin"]
    said = [r for r in records if r.get("request_id") == request_id]
    assert [(r["level"], r["tool"], r["outcome"]) for r in said] == [
        ("INFO", "requestApproval", "asked"), ("INFO", "requestApproval", "answered")]  # fmt: skip
    assert said[1]["by"] == ALICE and isinstance(said[1]["seconds"], float)


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
