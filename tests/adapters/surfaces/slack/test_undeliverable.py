"""A request Slack will not show: it settles as undeliverable at once, not at its deadline.

The fake Slack refuses `chat.postMessage` (5xx, then an error no retry can fix); the model is
told the person could not be reached (not that they did not answer), and the audit log says
why. A 5xx whose body is not Slack's JSON (a proxy's page) is retried like any 5xx, never a
crash of the retry code.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

import pytest
from slack_sdk.http_retry.builtin_interval_calculators import FixedValueRetryIntervalCalculator
from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.app import slack_client
from adapters.surfaces.slack.calls import SlackCallError, call_slack, call_slack_or_fail
from bot.records import RequestStatus
from tests.adapters.surfaces.slack.conftest import CHANNEL, JSON, Env, StartEnv
from tests.fakes.anthropic_api import reply_text, reply_tool_use
from tests.fakes.slack_api import FakeSlack

FINAL = "I could not reach you, so I did not deploy."
DEADLINE = 60  # seconds: the request must settle long before this
SOON = 10.0  # ... within this (a few Web API retries)
APPROVAL = {"action": "Deploy v2 to production", "reason": "Release day"}


async def refused_request(env: Env, *, failures: int) -> JSON:
    """Mention the bot while chat.postMessage fails `failures` times with HTTP 500, then for
    good with channel_not_found; returns the tool result the model was sent."""
    env.slack.fail("chat.postMessage", "internal_error", times=failures, status=500)
    env.slack.fail("chat.postMessage", "channel_not_found", times=20)
    env.model.script(reply_tool_use("requestApproval", APPROVAL), reply_text(FINAL))
    await env.mention("deploy v2 please")

    def told_final() -> bool:
        return FINAL in env.replies_said()

    await env.slack.wait_for(told_final, SOON)
    assert len(env.requests) == 2
    return env.tool_result(2)


async def test_a_request_slack_refuses_is_undeliverable_at_once(start_env: StartEnv) -> None:
    env = await start_env(HITL_TIMEOUT_SECONDS=DEADLINE)
    started = time.monotonic()
    result = await refused_request(env, failures=1)
    assert time.monotonic() - started < SOON

    # The model reads that the person could not be reached, and why: not a timeout, not a no.
    assert result["is_error"] is True
    error = json.loads(result["content"])["error"]
    assert "could not be reached" in error
    assert "channel_not_found" in error
    assert "timed out" not in error

    record = await env.store.request_for_tool_call(result["tool_use_id"])
    assert record is not None
    assert record.status is RequestStatus.UNDELIVERABLE
    assert record.reason is not None and "channel_not_found" in record.reason
    actions = {entry.action: entry for entry in await env.store.list_audit(request_id=record.id)}
    assert "channel_not_found" in actions["request.undeliverable"].detail["reason"]
    # Nothing was ever shown in the thread.
    assert not [m for m in env.slack.messages(CHANNEL) if m.get("blocks") and not env.streamed(m)]


async def test_a_preparing_message_left_behind_says_the_request_was_not_delivered(
    start_env: StartEnv,
) -> None:
    """ "Preparing request…" was posted, but neither its edit into the request nor a post of
    the request got through: once an edit does, that message says it was not delivered."""
    env = await start_env(HITL_TIMEOUT_SECONDS=DEADLINE)
    streamed = asyncio.Event()
    env.model.script(reply_tool_use("requestApproval", APPROVAL, hold=streamed), reply_text(FINAL))
    thread = await env.mention("deploy v2 please")
    (preparing,) = await env.slack.wait_for_call("chat.postMessage")
    assert "Preparing request…" in preparing["text"]
    env.slack.fail("chat.update", "cant_update_message")  # turning it into the request
    env.slack.fail("chat.postMessage", "channel_not_found")  # posting the request instead
    streamed.set()

    message = await thread.reply()  # the agent's words: the request's post was refused
    assert message["text"] == FINAL
    (shown,) = thread.requests_shown()
    closed = await thread.settled(shown, "Could not be delivered")
    assert "channel_not_found" in json.dumps(closed["blocks"])
    error = json.loads(env.tool_result(2)["content"])["error"]
    assert error.startswith("The person could not be reached")


# -- a 5xx whose body is not JSON --------------------------------------------------------------


@pytest.mark.parametrize(
    ("content_type", "body"),
    [
        ("text/html", "<html><body><h1>503 Service Unavailable</h1></body></html>"),
        ("text/plain", "upstream connect error or disconnect/reset before headers"),
        ("application/json", "<html>not json at all</html>"),
    ],
)
async def test_a_5xx_without_a_json_body_is_retried_not_a_crash(
    content_type: str, body: str, caplog: pytest.LogCaptureFixture
) -> None:
    async with FakeSlack() as slack:
        client = slack_client(slack.token, slack.base_url)
        for handler in client.retry_handlers:  # the same handlers, without their 0.5 s backoff
            handler.interval_calculator = FixedValueRetryIntervalCalculator(0.01)
        slack.fail("chat.postMessage", times=2, status=503, body=body, content_type=content_type)
        sent = await call_slack(lambda: _post(client), "chat.postMessage")
        assert sent is not None and sent["ok"] is True

        slack.fail("chat.postMessage", times=20, status=503, body=body, content_type=content_type)
        with (
            caplog.at_level(logging.ERROR, logger="adapters.surfaces.slack.surface"),
            pytest.raises(SlackCallError, match="HTTP 503"),
        ):
            await call_slack_or_fail(lambda: _post(client), "chat.postMessage", attempts=2)
        assert not any(record.exc_info for record in caplog.records)


async def _post(client: AsyncWebClient) -> Any:
    return await client.chat_postMessage(channel=CHANNEL, text="hello")
