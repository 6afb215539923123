"""The admin console served as `serve` serves it (build_web_app, the guard, the sub-app) on
127.0.0.1, on a SQLite store filled with requests: some answered, declined, expired, one whose
arguments hold a <script>."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from adapters.doors.admin.app import AdminConsole, VerifyChain
from adapters.serve.http_server import build_web_app
from bot.doors.tokens import Tokens
from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, open_store
from bot.store.admin_sessions import AdminSessionTables
from bot.store.copies import CopyTables
from bot.store.doors import DoorTables
from bot.store.request_log import RequestLog
from bot.words.tool_names import GATE_TOOL
from tests.adapters.surfaces.slack.conftest import ADMIN, ALICE, CHANNEL, Env, start_env

__all__ = ["start_env"]

SCRIPT = "<script>alert(1)</script>"
ENV_TOKEN = "env-admin-token-0123456789abcdef"
DAY = timedelta(days=1)


@dataclass
class Served:
    url: str
    store: SqlStore
    tokens: Tokens
    console: AdminConsole


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SqlStore]:
    opened = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'admin.db'}")
    try:
        yield opened
    finally:
        await opened.close()


async def fill(store: SqlStore, now: datetime | None = None) -> None:
    """Seven requests over three days (two tools, every common outcome), `r-script` last."""
    now = now or datetime.now(UTC)
    start = now.replace(hour=8, minute=0, second=0, microsecond=0) - 3 * DAY
    plan: list[tuple[str, dict[str, Any], RequestStatus | None, float, str | None]] = [
        ("approve_deploy", {"service": "api", "version": "1.2"}, RequestStatus.RESOLVED, 30, "U9"),
        ("approve_deploy", {"service": "web"}, RequestStatus.REJECTED, 300, "U9"),
        ("ask_human", {"question": "ok?"}, RequestStatus.TIMED_OUT, 600, None),
        ("approve_deploy", {"service": "db"}, RequestStatus.RESOLVED, 60, "U8"),
        ("ask_human", {"question": "which?"}, RequestStatus.RESOLVED, 120, "U8"),
        ("ask_human", {"question": "still?"}, None, 0, None),
        ("run_command", {"command": SCRIPT}, RequestStatus.REJECTED, 45, "U9"),
    ]
    for n, (tool, arguments, status, seconds, by) in enumerate(plan):
        made = start + (n // 3) * DAY + timedelta(minutes=n)
        request_id = "r-script" if tool == "run_command" else f"r{n}"
        record = RequestRecord(request_id, tool, arguments, room_id=f"C{n % 2}",
                               actor_id=f"U{n % 3}", created_at=made)  # fmt: skip
        await store.create_request(record)
        if status is not None:
            result = "approve" if status is RequestStatus.RESOLVED else None
            reason = "not now" if status is RequestStatus.REJECTED else None
            at = made + timedelta(seconds=seconds)
            assert await store.settle(Settlement(request_id, status, at, result, reason, by))


Serve = Callable[..., Awaitable[Served]]


@pytest.fixture
async def serve(store: SqlStore) -> AsyncIterator[Serve]:
    """Start the console (keywords: AdminConsole's) on 127.0.0.1:random; stopped at the end."""
    runners: list[web.AppRunner] = []

    async def start(*, chain: VerifyChain | None = None, **options: Any) -> Served:
        tokens = Tokens(DoorTables(store))
        console = AdminConsole(
            RequestLog(store), tokens, AdminSessionTables(store), chain=chain, **options
        )

        async def healthy() -> bool:
            return True

        app = build_web_app(health=healthy, mounts=[console.mount])
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        runners.append(runner)
        await web.TCPSite(runner, "127.0.0.1", 0).start()
        host, port = runner.addresses[0][:2]
        return Served(f"http://{host}:{port}", store, tokens, console)

    yield start
    for runner in runners:
        await runner.cleanup()


BOBBY = "U0BOBBY001"  # a person of the fake workspace with a display name of their own
APPROVALS = "C0APPROVALS"


@dataclass
class Asked:
    """The requests `ask_as_in_production` made, by who asked them."""

    by_ci: str  # asked through the HTTP API with the token `ci-agent`, of Alice in a DM
    by_deploy: str  # asked through the API with `deploy-bot`, in the general channel
    by_agent: str  # asked in Bobby's turn in a Slack thread, copied to an approvals channel


async def ask_as_in_production(env: Env) -> Asked:
    """Requests made as `serve` makes them: two through the API's door (two tokens), one an
    agent's tool call held for approval in a Slack thread (the store's rows as the gate writes
    them, with a copy in an approvals channel), which Bobby's admin approves."""
    env.slack.add_user(BOBBY, "bobby", real_name="Bobby Tables")
    env.slack.channels.add(CHANNEL)
    tokens = Tokens(DoorTables(env.store))
    made = []
    for name, to, tool, arguments in (
        (
            "ci-agent",
            f"slack:{ALICE}",
            "requestApproval",
            {"action": "Deploy v2", "reason": "Release day"},
        ),
        ("deploy-bot", f"slack:{CHANNEL}", "AskUserQuestion", {"question": "Which region?"}),
    ):
        token, _ = await tokens.create(name)
        body = {"tool": tool, "arguments": arguments, "to": to}
        async with env.http.post(
            f"{env.server.url}/api/v1/requests", json=body,
            headers={"Authorization": f"Bearer {token}"},
        ) as response:  # fmt: skip
            assert response.status in (200, 201, 202), await response.text()
            made.append(str((await response.json())["id"]))
    record = RequestRecord(
        "agent-call-1", GATE_TOOL, {"tool": "drop_table", "arguments": {"table": "users"}},
        room_id=f"slack:{CHANNEL}:1700000000.000100", actor_id=BOBBY,
        created_at=datetime.now(UTC) - timedelta(minutes=5),
    )  # fmt: skip
    await env.store.create_request(record)
    await CopyTables(env.store).keep(record.id, "slack", f"slack:{APPROVALS}:", {"ts": "1.2"})
    settled = Settlement(record.id, RequestStatus.RESOLVED, datetime.now(UTC), "approve", None,
                         ADMIN)  # fmt: skip
    assert await env.store.settle(settled)
    return Asked(made[0], made[1], record.id)
