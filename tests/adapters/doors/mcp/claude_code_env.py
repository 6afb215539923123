"""`hitl-bridge serve` with the fake Slack around it, its MCP door asking in Slack (for the
Claude Code tests): permission prompts posted in a channel, answered by clicks there."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from tests.adapters.doors.api.test_api import TO, start
from tests.adapters.surfaces.slack.conftest import CHANNEL, WAIT, Env, StartEnv

JSON = dict[str, Any]


async def serving(start_env: StartEnv) -> tuple[Env, str]:
    """The service, asking `TO` when a call names nobody, and a token for Claude Code."""
    env, api = await start(start_env, HITL_MCP_DEFAULT_TO=TO)
    return env, api.token


@asynccontextmanager
async def mcp_client(env: Env, token: str) -> AsyncIterator[Client]:
    """The official MCP client on the service's /mcp."""
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    transport = streamable_http_client(f"{env.server.url}/mcp", http_client=http)
    async with http, Client(transport, cache=None) as client:
        yield client


def actions(message: Mapping[str, Any]) -> dict[str, str]:
    """A message's buttons: action id to label."""
    return {
        element["action_id"]: element["text"]["text"]
        for block in message.get("blocks", [])
        if block.get("type") == "actions"
        for element in block.get("elements", [])
        if "action_id" in element
    }


async def gate_message(env: Env, within: float = WAIT) -> JSON:
    """The permission request's message in Slack, once posted with its buttons (`within`: the
    bound, longer for a process that first imports the SDKs)."""

    def live() -> list[JSON]:
        return [m for m in env.slack.messages(CHANNEL) if "hitl_approve" in actions(m)]

    found = await env.slack.wait_for(live, within)  # once there is one
    return found[-1]


async def decline_and_stop(env: Env, reason: str, within: float = WAIT) -> None:
    """Press "Decline and stop" on the request and give `reason` in its modal."""
    await env.click(await gate_message(env, within), "hitl_stop")
    await env.submit(await env.modal(), {"reason": {"reason": reason}})
