"""Long polls have a cap per token and per worker (bot/doors/long_polls.py): `hitl-bridge serve`
(Server.start) with the fake Slack, polled over HTTP with two tokens."""

from __future__ import annotations

import asyncio
from typing import Any

import aiohttp
import pytest

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.doors.api.test_api import APPROVAL, JSON, TO, Api, held, start
from tests.adapters.surfaces.slack.conftest import WAIT, Env, StartEnv


async def started(start_env: StartEnv, **settings: Any) -> tuple[Env, Api, str]:
    """The service, the API with token ci-agent, and another token's (other-agent)."""
    env, api = await start(start_env, **settings)
    other, _ = await Tokens(DoorTables(env.store)).create("other-agent")
    return env, api, other


async def poll(api: Api, request_id: str, token: str, wait: float) -> tuple[int, JSON, str | None]:
    """A long poll: its status, body and Retry-After."""
    url = f"{api.env.server.url}/api/v1/requests/{request_id}"
    headers = {"Authorization": f"Bearer {token}"}
    async with api.env.http.get(url, params={"wait": wait}, headers=headers) as response:
        return response.status, await response.json(), response.headers.get("Retry-After")


async def test_a_tokens_poll_over_its_cap_is_429_while_another_tokens_is_accepted(
    start_env: StartEnv,
) -> None:
    env, api, other = await started(
        start_env, HITL_LONG_POLLS_PER_TOKEN=2, HITL_LONG_POLLS_PER_WORKER=10
    )
    mine, theirs = (await api.create())[1]["id"], await _made_by(api, other)
    holding = [asyncio.create_task(poll(api, mine, api.token, 60)) for _ in range(2)]
    await held(env, 2, "ci-agent")

    status, refused, retry_after = await poll(api, mine, api.token, 60)
    assert status == 429 and retry_after is not None and int(retry_after) >= 1
    assert refused["error"] == "too_many_polls" and "holds 2 long polls" in refused["message"]
    assert "token" in refused["message"]
    status, accepted, _ = await poll(api, theirs, other, 0.05)  # another token: its own cap
    assert status == 200 and accepted["status"] == "pending"

    status, _ = await api.call("DELETE", f"/requests/{mine}")  # settled: the polls return
    assert status == 200
    for returned in await asyncio.wait_for(asyncio.gather(*holding), WAIT):
        assert returned[0] == 200 and returned[1]["status"] == "cancelled"
    await held(env, 0, "ci-agent")
    status, again, _ = await poll(api, mine, api.token, 1)  # their slots are free
    assert status == 200 and again["status"] == "cancelled"


async def test_a_poll_over_the_workers_cap_is_429(start_env: StartEnv) -> None:
    env, api, other = await started(
        start_env, HITL_LONG_POLLS_PER_TOKEN=5, HITL_LONG_POLLS_PER_WORKER=2
    )
    mine, theirs = (await api.create())[1]["id"], await _made_by(api, other)
    holding = [asyncio.create_task(poll(api, mine, api.token, 60)) for _ in range(2)]
    await held(env, 2)

    status, refused, retry_after = await poll(api, theirs, other, 60)
    assert status == 429 and retry_after is not None
    assert "this worker holds 2 long polls" in refused["message"]
    status, plain, _ = await poll(api, theirs, other, 0)  # no wait: no poll held, answered
    assert status == 200 and plain["status"] == "pending"

    await api.call("DELETE", f"/requests/{mine}")
    await asyncio.wait_for(asyncio.gather(*holding), WAIT)
    await held(env, 0)


@pytest.mark.slow  # a poll's end is waited for
async def test_a_client_gone_mid_poll_frees_its_slot(start_env: StartEnv) -> None:
    env, api, _ = await started(start_env, HITL_LONG_POLLS_PER_TOKEN=1)
    mine = (await api.create())[1]["id"]
    async with aiohttp.ClientSession() as leaving:  # its own connection, closed below
        url = f"{env.server.url}/api/v1/requests/{mine}"
        headers = {"Authorization": f"Bearer {api.token}"}
        gone = asyncio.create_task(leaving.get(url, params={"wait": 60}, headers=headers))
        await held(env, 1, "ci-agent")
        status, _, _ = await poll(api, mine, api.token, 60)
        assert status == 429  # the one slot is taken
        gone.cancel()
    await held(env, 0, "ci-agent")  # the client left: the poll ended, its slot free
    status, body, _ = await poll(api, mine, api.token, 0.05)
    assert status == 200 and body["status"] == "pending"


async def _made_by(api: Api, token: str) -> str:
    """A request made with `token`."""
    body = {"tool": "requestApproval", "arguments": APPROVAL, "to": TO}
    status, body = await api.call("POST", "/requests", body, token=token)
    assert status == 201, body
    return str(body["id"])
