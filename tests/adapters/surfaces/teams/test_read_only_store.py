"""A Teams message to a worker whose database cannot be written is answered that nothing can
be recorded right now (once, however often the Bot Framework delivers it), not dropped."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bot.bridge.turns import UNAVAILABLE
from tests.adapters.surfaces.teams.conftest import StartEnv


async def test_a_message_to_a_read_only_worker_is_told_it_cannot_be_recorded(
    start_env: StartEnv, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING)
    read_only = f"sqlite+aiosqlite:///file:{tmp_path / 'hitl.db'}?mode=ro&uri=true"
    env = await start_env(HITL_DATABASE_URL=read_only)

    chat = await env.say("deploy v2 please")
    assert await chat.reply() == UNAVAILABLE
    status, _ = await env.post(env.posted[-1])  # delivered again
    assert status == 200
    second = await env.say("and now?")
    assert await second.reply(2) == UNAVAILABLE  # the same personal chat: its second reply
    assert chat.texts() == [UNAVAILABLE, UNAVAILABLE]  # one per message, not per delivery
    assert env.requests == []
    assert not [r for r in caplog.records if r.exc_info], "no tracebacks"
