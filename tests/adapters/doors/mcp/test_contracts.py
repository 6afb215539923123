"""The MCP door's contracts against a careless client (issue 21), with the official `mcp` client:
numbers that are not numbers, the bearer scheme's case, what a person or the model reads of an
expired permission prompt, and text that would act on its reader, through `hitl-bridge serve`
(Server.start) to the fake Slack."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.doors.api.test_api import posted
from tests.adapters.doors.api.test_contracts import HOSTILE, SHOWN
from tests.adapters.doors.mcp.served import BASH, WAIT, Served, connected, text
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, StartEnv
from tests.adapters.surfaces.slack.conftest import start_env as start_env  # the fixture


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    async with asyncio.timeout(WAIT):
        return await client.call_tool(tool, arguments)


FIELD = {"name": "replicas", "label": "Replicas", "type": "integer"}


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("ask_question", {"question": "?", "timeout_seconds": True}, "timeout_seconds"),
        ("ask_question", {"question": "?", "timeout_seconds": "100"}, "timeout_seconds"),
        ("ask_question", {"question": "?", "wait_seconds": "5"}, "wait_seconds"),
        ("collect_data", {"fields": [{**FIELD, "min": "1"}]}, "fields.0.min"),
        ("collect_data", {"fields": [{**FIELD, "required": 1}]}, "fields.0.required"),
        ("select_option", {"question": "?", "options": ["a", 2]}, "options.1"),
        ("await_answer", {"request_id": "x", "wait_seconds": False}, "wait_seconds"),
    ],
)
async def test_a_number_is_a_number(
    bridge: Served, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with connected(bridge) as client:
        result = await call(client, tool, **arguments)
    assert result.is_error and f"{field}: " in text(result), text(result)
    assert not bridge.person.views  # nothing was posted


async def test_a_permission_prompt_with_a_boolean_timeout_is_denied_naming_it(
    bridge: Served,
) -> None:
    async with connected(bridge) as client:
        result = await call(client, "permission_prompt", tool_name="Bash", input=BASH,
                            timeout_seconds=True)  # fmt: skip
    denied = json.loads(text(result))
    assert denied["behavior"] == "deny" and "timeout_seconds" in denied["message"]
    assert not bridge.person.views


@pytest.mark.parametrize("scheme", ["bearer", "BEARER"])
async def test_the_bearer_scheme_is_case_insensitive(bridge: Served, scheme: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    headers = {"Authorization": f"{scheme} {bridge.token}", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    async with (
        aiohttp.ClientSession() as http,
        http.post(bridge.endpoint, data=body, headers=headers) as response,
    ):
        assert response.status != 401, await response.text()


@pytest.mark.slow  # its deadline passes
async def test_an_expired_permission_prompt_names_no_internal_tool(bridge: Served) -> None:
    """It said `Human input timed out after 2s for tool 'approveToolCall'`: a name neither
    the person nor Claude Code ever saw."""
    async with connected(bridge) as client:
        prompt = asyncio.create_task(client.call_tool(
            "permission_prompt", {"tool_name": "Bash", "input": BASH, "timeout_seconds": 1},
        ))  # fmt: skip
        view = await bridge.person.posted()
        async with asyncio.timeout(WAIT):
            result = await prompt
    denied = json.loads(text(result))
    assert denied == {
        "behavior": "deny",
        "message": "Expired: No answer within 1s to the permission prompt",
    }
    body = await bridge.doors.get(bridge.name, view.request_id)
    assert body["reason"] == "No answer within 1s to the permission prompt"


async def test_control_and_bidi_characters_never_reach_slack(start_env: StartEnv) -> None:
    env = await start_env()
    env.slack.channels.add(CHANNEL)
    token, _ = await Tokens(DoorTables(env.store)).create("mcp-agent")
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    transport = streamable_http_client(f"{env.server.url}/mcp", http_client=http)
    async with http, Client(transport, cache=None) as client:
        result = await call(client, "ask_question", question=HOSTILE, wait_seconds=0,
                            to=f"slack:{CHANNEL}/{ALICE}")  # fmt: skip
    pending = result.structured_content
    assert isinstance(pending, dict) and pending["status"] == "pending", text(result)
    message = await posted(env, pending["request_id"])
    (sent,) = env.slack.calls_to("chat.postMessage")
    shown = json.dumps([sent, message], ensure_ascii=False)
    for char in ("\x1b", "\x00", "\x07", "\u202e"):
        assert char not in shown
    record = await env.store.get_request(pending["request_id"])
    assert record is not None and record.arguments == {"question": SHOWN}
