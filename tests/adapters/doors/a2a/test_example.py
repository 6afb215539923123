"""examples/a2a/ask.py, run against the served bridge: the person approves in Slack, and the
example's stream ends completed with the answer."""

from __future__ import annotations

import asyncio

import pytest

from examples.a2a.ask import ask_approval
from tests.adapters.doors.a2a.conftest import TO, calling
from tests.adapters.doors.a2a.test_a2a import pending_id
from tests.adapters.doors.api.test_api import posted
from tests.adapters.surfaces.slack.conftest import WAIT, StartEnv


async def test_the_example_streams_the_task_to_the_person_s_answer(
    start_env: StartEnv, capsys: pytest.CaptureFixture[str]
) -> None:
    async with calling(start_env) as caller:
        url = caller.env.server.url
        asked = asyncio.create_task(
            ask_approval(url, caller.token, TO, "Deploy v2 to production", "Release day")
        )
        request_id = await pending_id(caller)
        await caller.env.click(await posted(caller.env, request_id), "hitl_approve")
        outcome = await asyncio.wait_for(asked, WAIT)
    assert outcome["state"] == "TASK_STATE_COMPLETED"
    assert outcome["answer"]["approved"] is True
    printed = capsys.readouterr().out
    assert f"task {request_id}: TASK_STATE_WORKING" in printed
    assert "TASK_STATE_COMPLETED: Answered by" in printed
