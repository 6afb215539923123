"""hitl_client against the real service: the typed helpers' requests posted in (fake) Slack
and answered there by clicks; a decline raised as RequestDeclined."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from hitl_client import HitlClient, RequestDeclined
from tests.adapters.doors.api.contract import Checking
from tests.adapters.doors.api.test_api import TO, posted, start
from tests.adapters.surfaces.slack.conftest import WAIT, Env, StartEnv


async def answer_when_posted(env: Env, client: HitlClient, action: str, **extra: Any) -> None:
    """Click `action` on the first request the client made, once Slack shows it."""
    pending: list[str] = []
    while not pending:
        pending = [r.id async for page in client.list(status="pending") for r in page]
        await asyncio.sleep(0.02)
    message = await posted(env, pending[0])
    await env.click(message, action, **extra)


async def test_the_client_asks_and_gets_the_typed_answer(start_env: StartEnv) -> None:
    env, api = await start(start_env)
    async with HitlClient(env.server.url, api.token, transport=Checking(api.document)) as client:
        clicking = asyncio.create_task(answer_when_posted(env, client, "hitl_approve"))
        answer = await asyncio.wait_for(
            client.request_approval("Deploy v2", "Release day", TO), WAIT
        )
        await clicking
    assert answer.approved is True


async def decline_when_posted(env: Env, client: HitlClient, reason: str) -> None:
    await answer_when_posted(env, client, "hitl_decline")
    await env.submit(await env.modal(), {"reason": {"reason": reason}})


async def test_a_declined_request_raises_and_a_cancelled_one_says_so(
    start_env: StartEnv,
) -> None:
    env, api = await start(start_env)
    async with HitlClient(env.server.url, api.token, transport=Checking(api.document)) as client:
        made = await client.create("requestApproval", {"action": "Drop it", "reason": "x"}, TO)
        assert (await client.cancel(made.id)).status == "cancelled"
        declining = asyncio.create_task(decline_when_posted(env, client, "not on a Friday"))
        with pytest.raises(RequestDeclined) as declined:
            await asyncio.wait_for(
                client.confirm_action("Drop the table?", "All rows go", "danger", TO), WAIT
            )
        await declining
    assert declined.value.reason == "not on a Friday"
