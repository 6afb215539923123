"""`serve` with Teams listens while the Teams SDK is still being imported (in a thread, begun
first thing: adapters/surfaces/teams/loading.py) and is ready once it is in.

The import is held at a gate the test opens, so "during" is a state the test is sure of, not
a race: meanwhile `/readyz` says starting (503) and `/api/messages` asks Bot Framework to retry
(503, `Retry-After`); after, `/readyz` is 200 and an activity is answered. The real import runs
behind the gate; FakeBotConnector and FakeAnthropic are the other side, as in conftest.py.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path
from types import ModuleType
from typing import Any

import aiohttp
import pytest

from adapters.serve.service import Server
from adapters.serve.settings import Settings
from adapters.surfaces.teams.loading import import_teams_app
from bot.store import upgrade
from tests.adapters.surfaces.teams.conftest import (
    ADMIN,
    MODEL,
    WAIT,
    Env,
    StartEnv,
    message_activity,
)
from tests.conformance import conformance_file
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.bot_connector import FakeBotConnector


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


async def first_answer(http: aiohttp.ClientSession, url: str) -> tuple[int, Any]:
    """(status, JSON) of the first GET of `url` the server answers (it is still binding)."""
    async with asyncio.timeout(WAIT):
        while True:
            try:
                async with http.get(url) as response:
                    return response.status, await response.json()
            except aiohttp.ClientConnectionError:
                await asyncio.sleep(0.01)  # not listening yet: no event to wait on


async def test_ready_only_once_the_teams_sdk_is_in(start_env: StartEnv, tmp_path: Path) -> None:
    """(`start_env` is not called: it clears the caller's Teams and Slack variables.)"""
    wanted, let_in = asyncio.Event(), asyncio.Event()

    async def gated_import() -> ModuleType:
        wanted.set()
        await let_in.wait()
        return await import_teams_app()

    swagger = conformance_file("teams/bot-connector.swagger.json")
    async with (
        FakeBotConnector(swagger=swagger) as connector,
        FakeAnthropic() as model,
        aiohttp.ClientSession() as http,
    ):
        url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
        await upgrade(url)
        port = free_port()
        settings = Settings(
            _env_file=None, HITL_DATABASE_URL=url, HITL_HOST="127.0.0.1", HITL_PORT=port,
            HITL_TEAMS_ALLOW_UNAUTHENTICATED=True, HITL_ADMINS=ADMIN.aad,
            ANTHROPIC_API_KEY="test", ANTHROPIC_BASE_URL=model.base_url, HITL_MODEL=MODEL,
            HITL_TEAMS_STREAM_INTERVAL=0,
        )  # fmt: skip
        starting = asyncio.create_task(Server.start(settings, import_teams=gated_import))
        await asyncio.wait_for(wanted.wait(), WAIT)
        base = f"http://127.0.0.1:{port}"

        status, body = await first_answer(http, f"{base}/readyz")
        assert status == 503 and body["checks"]["service"] == "starting or stopping"
        assert not starting.done()
        async with http.get(f"{base}/healthz") as response:
            assert response.status == 503
        activity = message_activity(connector.service_url, "hitl pending", user=ADMIN)
        async with http.post(f"{base}/api/messages", json=activity) as response:
            assert response.status == 503
            assert response.headers["Retry-After"] == "1"
            assert (await response.json())["error"] == "starting"
        assert connector.calls == []

        let_in.set()
        server = await asyncio.wait_for(starting, WAIT)
        try:
            status, body = await first_answer(http, f"{base}/readyz")
            assert (status, body["ready"]) == (200, True)
            env = Env(server=server, connector=connector, model=model, http=http)
            chat = await env.say("hitl pending", user=ADMIN)
            assert await chat.reply()
            assert server.serving_fields()["surfaces"] == ["Teams (/api/messages)"]
        finally:
            await server.stop()


async def test_a_start_that_fails_before_teams_is_in_leaves_no_import_waiting(
    start_env: StartEnv, tmp_path: Path
) -> None:
    """The database is behind its migrations: the start fails in one line, and the import
    begun for Teams is let go of (no task left pending, no warning)."""
    started: list[bool] = []

    async def watched_import() -> ModuleType:
        started.append(True)
        return await import_teams_app()

    settings = Settings(
        _env_file=None, HITL_DATABASE_URL=f"sqlite+aiosqlite:///{tmp_path / 'new.db'}",
        HITL_HOST="127.0.0.1", HITL_PORT=0, HITL_TEAMS_ALLOW_UNAUTHENTICATED=True,
        HITL_MODEL="scripted",
    )  # fmt: skip
    with pytest.raises(Exception, match="run `hitl-bridge db upgrade` first"):
        await Server.start(settings, import_teams=watched_import)
    assert started == [True]
