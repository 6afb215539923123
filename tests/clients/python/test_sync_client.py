"""SyncHitlClient against the real service: the same answers and errors as HitlClient, its
requests posted in (fake) Slack and answered there by clicks, the client blocking in a thread
of its own as a script's would."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import pytest

from hitl_client import HitlApiError, RequestDeclined, SyncHitlClient
from tests.adapters.doors.api.test_api import TO, posted, start
from tests.adapters.surfaces.slack.conftest import WAIT, Env, StartEnv

T = TypeVar("T")


async def blocking(call: Callable[..., T], *args: Any) -> T:
    """A blocking call in a thread: this loop serves the bridge it calls."""
    return await asyncio.wait_for(asyncio.to_thread(call, *args), WAIT)


async def click_when_posted(env: Env, hitl: SyncHitlClient, action: str) -> None:
    """Click `action` on the first pending request of the client's token, once shown."""
    pending: list[str] = []
    while not pending:
        pages = await blocking(lambda: list(hitl.list(status="pending")))
        pending = [request.id for page in pages for request in page]
        await asyncio.sleep(0.02)
    await env.click(await posted(env, pending[0]), action)


async def test_a_blocking_approval_is_answered_by_a_click(start_env: StartEnv) -> None:
    env, api = await start(start_env)
    with SyncHitlClient(env.server.url, api.token) as hitl:
        clicking = asyncio.create_task(click_when_posted(env, hitl, "hitl_approve"))
        answer = await blocking(hitl.request_approval, "Deploy v2", "Release day", TO)
        await clicking
        assert answer.approved is True
        made = await blocking(hitl.create, "AskUserQuestion", {"question": "Which region?"}, TO)
        assert (await blocking(hitl.get, made.id)).status == "pending"
        assert (await blocking(hitl.cancel, made.id)).status == "cancelled"


async def test_a_decline_raises_and_bad_arguments_name_the_field(start_env: StartEnv) -> None:
    env, api = await start(start_env)
    with SyncHitlClient(env.server.url, api.token) as hitl:
        with pytest.raises(HitlApiError) as refused:
            await blocking(hitl.create, "requestApproval", {"action": "Deploy"}, TO)
        assert refused.value.status == 400 and "reason" in refused.value.fields
        declining = asyncio.create_task(click_when_posted(env, hitl, "hitl_decline"))

        async def decline() -> None:
            await declining
            await env.submit(await env.modal(), {"reason": {"reason": "not on a Friday"}})

        submitting = asyncio.create_task(decline())
        with pytest.raises(RequestDeclined) as declined:
            await blocking(hitl.confirm_action, "Drop it?", "All rows", "danger", TO)
        await submitting
    assert declined.value.reason == "not on a Friday"
