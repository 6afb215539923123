"""review_tool_call against the real service: another agent's call shown in (fake) Slack with
Approve / Edit / Decline, and each decision read back as a ToolCallReview."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from hitl_client import HitlApiError, HitlClient, ToolCallReview
from tests.adapters.doors.api.contract import Checking
from tests.adapters.doors.api.test_api import TO, posted, start
from tests.adapters.surfaces.slack.conftest import WAIT, Env, StartEnv

CALL = {"service": "api", "replicas": 1}


async def reviewed(env: Env, hitl: HitlClient, act: Any) -> ToolCallReview:
    """The review of a `deploy` call, the person acting on its message with `act`."""
    asking = asyncio.create_task(hitl.review_tool_call("deploy", CALL, TO))
    pending: list[str] = []
    while not pending:
        pending = [r.id async for page in hitl.list(status="pending") for r in page]
        await asyncio.sleep(0.02)
    await act(await posted(env, pending[0]))
    return await asyncio.wait_for(asking, WAIT)


async def test_approved_edited_and_declined_calls_are_reviews(start_env: StartEnv) -> None:
    env, api = await start(start_env)
    async with HitlClient(env.server.url, api.token, transport=Checking(api.document)) as hitl:

        async def approve(message: Any) -> None:
            await env.click(message, "hitl_approve")

        async def edit(message: Any) -> None:
            await env.click(message, "hitl_edit")
            values = {"service": {"service": "api"}, "replicas": {"replicas": "3"}}
            assert await env.submit(await env.modal(1), values) == {}

        async def decline(message: Any) -> None:
            await env.click(message, "hitl_decline")
            reason = {"reason": {"reason": "not during the freeze"}}
            assert await env.submit(await env.modal(2), reason) == {}  # the edit's was the first

        approved = await reviewed(env, hitl, approve)
        edited = await reviewed(env, hitl, edit)
        declined = await reviewed(env, hitl, decline)
    assert (approved.approved, approved.edited, approved.arguments) == (True, False, CALL)
    assert (edited.approved, edited.edited) == (True, True)
    assert edited.arguments == {"service": "api", "replicas": 3}
    assert (declined.approved, declined.reason) == (False, "not during the freeze")
    assert declined.answered_by is not None


async def test_a_call_without_a_tool_name_is_refused_naming_the_field(
    start_env: StartEnv,
) -> None:
    env, api = await start(start_env)
    async with HitlClient(env.server.url, api.token, transport=Checking(api.document)) as hitl:
        with pytest.raises(HitlApiError) as refused:
            await hitl.create("approveToolCall", {"input": {}}, TO)
    assert refused.value.status == 400
    assert refused.value.fields == {"tool_name": "Field required"}


async def test_a_call_offered_with_allow_is_granted_and_shows_its_description(
    start_env: StartEnv,
) -> None:
    env, api = await start(start_env)
    async with HitlClient(env.server.url, api.token, transport=Checking(api.document)) as hitl:
        shown: list[str] = []

        async def grant(message: Any) -> None:
            shown.append(json.dumps(message))
            await env.click(message, "hitl_grant")

        asking = asyncio.create_task(hitl.review_tool_call(
            "deploy", CALL, TO, description="Roll out api to staging",
            allow="deploys to staging",
        ))  # fmt: skip
        pending: list[str] = []
        while not pending:
            pending = [r.id async for page in hitl.list(status="pending") for r in page]
            await asyncio.sleep(0.02)
        await grant(await posted(env, pending[0]))
        review = await asyncio.wait_for(asking, WAIT)
    assert (review.approved, review.grant, review.arguments) == (True, True, CALL)
    assert "Roll out api to staging" in shown[0] and "deploys to staging" in shown[0]
