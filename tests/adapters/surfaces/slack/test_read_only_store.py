"""Healthy but not ready: a worker whose database cannot be written.

The service runs on a SQLite database opened read-only (`?mode=ro`, which stops root too, where
a chmod would not). `/healthz` says it is alive, `/readyz` that it cannot take work and why, and a
mention is answered that nothing can be recorded right now, instead of being acked and dropped
with a traceback. Each kind of failure is one WARNING line, never a traceback.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

import pytest

from bot.bridge.turns import UNAVAILABLE
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, Env, StartEnv, Thread
from tests.fakes.slack_api import BOT_USER_ID
from tests.fakes.slack_signing import event_callback, message_event


def read_only(tmp_path: Path) -> str:
    """The test database (start_env migrates it first), opened read-only."""
    return f"sqlite+aiosqlite:///file:{tmp_path / 'hitl.db'}?mode=ro&uri=true"


async def get(env: Env, path: str) -> tuple[int, Any]:
    async with env.http.get(f"{env.server.url}{path}") as response:
        return response.status, await response.json()


def count_probes(env: Env) -> list[str]:
    """The health-row writes the store runs from now on."""
    probes: list[str] = []

    def seen(statement: str) -> None:
        if statement.lstrip().upper().startswith("UPDATE HEALTH"):
            probes.append(statement)

    env.store.watch(seen)
    return probes


async def test_a_writable_worker_is_ready(start_env: StartEnv) -> None:
    env = await start_env()
    probes = count_probes(env)
    status, body = await get(env, "/readyz")
    assert (status, body["ready"]) == (200, True)
    assert set(body["checks"].values()) == {"ok"}
    # A flood of probes shares one check (and reuses it for a second).
    answers = await asyncio.gather(*(get(env, "/readyz") for _ in range(20)))
    assert {status for status, _ in answers} == {200}
    assert len(probes) == 1


async def test_a_read_only_store_is_alive_not_ready_and_says_so(
    start_env: StartEnv, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    env = await start_env(HITL_DATABASE_URL=read_only(tmp_path))

    assert await get(env, "/healthz") == (200, {"ok": True})
    status, body = await get(env, "/readyz")
    assert status == 503
    assert body["ready"] is False
    assert body["checks"]["service"] == body["checks"]["migrations"] == "ok"
    assert "readonly" in body["checks"]["store"]

    # A mention Slack delivers twice (message, then app_mention) is told once, in its thread.
    thread = await deliver_twice(env, "deploy v2 please")
    assert (await thread.reply())["text"] == UNAVAILABLE
    other = await env.mention("and now?")
    assert (await other.reply())["text"] == UNAVAILABLE
    assert [m["text"] for m in thread.texts()] == [UNAVAILABLE]
    assert env.requests == []  # the model was never asked

    await env.server.stop()  # its runs cannot be released either: a line, not a crash
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [r for r in problems if r.exc_info], "no tracebacks"
    store_lines = [r.getMessage() for r in problems if "readonly" in r.getMessage()]
    assert len([line for line in store_lines if "taking a new message" in line]) == 1


async def deliver_twice(env: Env, text: str) -> Thread:
    """A mention as Slack sends it: a `message` event and an `app_mention`, same ts."""
    full = f"<@{BOT_USER_ID}> {text}"
    root = env.slack.add_message(CHANNEL, full, user=ALICE)
    for kind in ("message", "app_mention"):
        delivery = message_event(full, user=ALICE, channel=CHANNEL, ts=root["ts"], event_type=kind)
        response = await env.post(event_callback(delivery))
        assert response.status == 200
    return Thread(env, root["ts"])
