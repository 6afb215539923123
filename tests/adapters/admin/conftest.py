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

from adapters.admin.app import AdminConsole, ChainCheck
from adapters.server import build_web_app
from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import SqlStore, open_store
from bot.store.admin_sessions import AdminSessionTables
from bot.store.doors import DoorTables
from bot.store.request_log import RequestLog
from bot.tokens import Tokens
from tests.adapters.slack.conftest import start_env

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

    async def start(*, chain: ChainCheck | None = None, **options: Any) -> Served:
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
