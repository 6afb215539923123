"""Both protocol eras of the `mcp` SDK on the door, each with the official client, every HTTP
exchange recorded: 2026-07-28 (`server/discover`, `_meta` and the `Mcp-Method` header on
every request, no handshake) and 2025-11-25 (the handshake, session-free: the door issues no
session, so a call needs none). And an unknown tool, the protocol error of the tools spec."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from bot.requests.kinds import Verb
from tests.adapters.doors.mcp.served import PERSON, Served, pressing

MODERN, HANDSHAKE = "2026-07-28", "2025-11-25"
VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


@dataclass
class Wire:
    """What the client sent and was answered, request by request."""

    sent: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    answered: list[dict[str, str]] = field(default_factory=list)

    async def request(self, request: httpx2.Request) -> None:
        if request.method == "POST":
            self.sent.append((dict(request.headers), json.loads(request.content)))

    async def response(self, response: httpx2.Response) -> None:
        self.answered.append(dict(response.headers))

    def methods(self) -> list[str]:
        return [body["method"] for _, body in self.sent]


@asynccontextmanager
async def recorded(bridge: Served, mode: str) -> AsyncIterator[tuple[Client, Wire]]:
    wire = Wire()
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {bridge.token}"})
    http.event_hooks = {"request": [wire.request], "response": [wire.response]}
    transport = streamable_http_client(bridge.endpoint, http_client=http)
    async with http, Client(transport, mode=mode, cache=None) as client:
        yield client, wire


async def test_a_2026_client_discovers_and_sends_its_era_on_every_request(bridge: Served) -> None:
    bridge.person.act = pressing(Verb.ANSWER, {"answer": "blue"})
    async with recorded(bridge, "auto") as (client, wire):
        assert client.protocol_version == MODERN
        assert client.server_info is not None and client.server_info.name == "hitl-bridge"
        await client.list_tools()
        answered = await client.call_tool("ask_question", {"question": "Which colour?"})
    assert answered.structured_content is not None
    assert answered.structured_content["answered_by"] == PERSON
    assert wire.methods() == ["server/discover", "tools/list", "tools/call"]  # no handshake
    for headers, body in wire.sent:
        assert headers["mcp-protocol-version"] == MODERN
        assert headers["mcp-method"] == body["method"]
        assert body["params"]["_meta"][VERSION_KEY] == MODERN
    assert wire.sent[-1][0]["mcp-name"] == "ask_question"
    assert not any("mcp-session-id" in headers for headers in wire.answered)


async def test_a_2025_client_shakes_hands_and_is_given_no_session(bridge: Served) -> None:
    bridge.person.act = pressing(Verb.APPROVE)
    async with recorded(bridge, "legacy") as (client, wire):
        assert client.protocol_version == HANDSHAKE
        approved = await client.call_tool("request_approval", {"action": "Deploy", "reason": "Go"})
    assert approved.structured_content is not None and approved.structured_content["approved"]
    assert wire.methods()[0] == "initialize"
    assert "tools/call" in wire.methods()
    assert not any("mcp-session-id" in headers for headers in wire.answered)
    assert all("mcp-method" not in headers for headers, _ in wire.sent)


async def test_a_2025_call_needs_no_handshake_first(bridge: Served) -> None:
    """Session-free: one POST of tools/call, as any worker of several would take it."""
    headers = {"Authorization": f"Bearer {bridge.token}", "MCP-Protocol-Version": HANDSHAKE,
               "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    asked = {"question": "?", "to": "slack:C9"}
    call = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": "ask_question", "arguments": asked}}  # fmt: skip
    async with (
        aiohttp.ClientSession() as http,
        http.post(bridge.endpoint, json=call, headers=headers) as response,
    ):
        assert response.status == 200
        stream = await response.text()
    (data,) = [line[5:] for line in stream.splitlines() if line.startswith("data:")]
    result = json.loads(data)["result"]
    assert result["isError"] and "slack:C9 cannot be reached" in result["content"][0]["text"]


async def test_a_2026_request_whose_header_disagrees_with_its_body_is_refused(
    bridge: Served,
) -> None:
    meta = {VERSION_KEY: MODERN,
            "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
            "io.modelcontextprotocol/clientCapabilities": {}}  # fmt: skip
    headers = {"Authorization": f"Bearer {bridge.token}", "MCP-Protocol-Version": MODERN,
               "Mcp-Method": "tools/call", "Content-Type": "application/json",
               "Accept": "application/json, text/event-stream"}  # fmt: skip
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": meta}}
    async with (
        aiohttp.ClientSession() as http,
        http.post(bridge.endpoint, json=listing, headers=headers) as response,
    ):
        assert response.status == 400
        error = (await response.json())["error"]
    assert error["code"] == types.HEADER_MISMATCH


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_an_unknown_tool_is_the_protocol_error(bridge: Served, mode: str) -> None:
    async with recorded(bridge, mode) as (client, _):
        with pytest.raises(MCPError) as raised:
            await client.call_tool("nope", {})
    assert raised.value.error.code == types.INVALID_PARAMS
    assert raised.value.error.message.startswith("Unknown tool: nope (the tools are ask_question")
    assert not bridge.person.views
