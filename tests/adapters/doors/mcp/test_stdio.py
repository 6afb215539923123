"""`hitl-bridge mcp` (adapters/doors/mcp/stdio.py): the stdio proxy run as a process against a
bridge
serving the MCP door on loopback, talked to with the official `mcp` stdio client."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from adapters.doors.mcp.stdio import endpoint_of, proxy_target
from bot import ConfigurationError
from bot.requests.kinds import Verb
from tests.adapters.doors.mcp.served import (
    BASH,
    PERSON,
    Served,
    connected,
    editing,
    pressing,
    served,
    text,
)

pytestmark = pytest.mark.subprocess  # the MCP proxy runs as a process over stdio

ROOT = Path(__file__).resolve().parents[4]
PROXY = [sys.executable, "-m", "adapters.doors.mcp.stdio"]
# A Python process importing the SDKs (uncompiled, PYTHONDONTWRITEBYTECODE) on a loaded 2-core
# machine can take longer to start than WAIT allows an in-process step.
PROCESS_WAIT = 30.0


@asynccontextmanager
async def proxied(bridge: Served, mode: str = "auto") -> AsyncIterator[Client]:
    """The proxy as a process on `bridge`, and the official stdio client on it."""
    env = {"HITL_URL": bridge.url, "HITL_TOKEN": bridge.token}
    parameters = StdioServerParameters(command=PROXY[0], args=PROXY[1:], env=env, cwd=ROOT)
    async with asyncio.timeout(PROCESS_WAIT), Client(parameters, mode=mode, cache=None) as client:
        yield client


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_proxy_serves_the_bridge_s_tools_and_results(bridge: Served, mode: str) -> None:
    async with connected(bridge) as direct:
        tools = (await direct.list_tools()).tools
    bridge.person.act = pressing(Verb.ANSWER, {"answer": "blue"})
    async with proxied(bridge, mode) as client:
        assert (await client.list_tools()).tools == tools
        answered = await client.call_tool("ask_question", {"question": "Which colour?"})
        bridge.person.act = pressing(Verb.DECLINE, {"reason": "no"})
        declined = await client.call_tool("confirm_action", {"title": "Go", "message": "Go?"})
        bridge.person.act = None
        pending = await client.call_tool("ask_question", {"question": "?", "wait_seconds": 0})
        unaddressed = await client.call_tool("ask_question", {"question": "?", "to": "teams:"})
        with pytest.raises(MCPError) as unknown:  # the bridge's protocol error, passed on
            await client.call_tool("nope", {})
    assert unknown.value.error.code == types.INVALID_PARAMS
    assert unknown.value.error.message.startswith("Unknown tool: nope")
    (asked, _, waiting) = bridge.person.views
    assert answered.structured_content == {
        "answer": "blue", "request_id": asked.request_id, "status": "answered",
        "answered_by": PERSON,
    }  # fmt: skip
    assert declined.is_error and text(declined) == f"Declined by {PERSON}: no"
    assert isinstance(pending.structured_content, dict)
    assert pending.structured_content["request_id"] == waiting.request_id
    assert unaddressed.is_error and text(unaddressed).startswith("'teams:' is not an address")
    body = await bridge.doors.get(bridge.name, asked.request_id)  # asked as the token's name
    assert body["status"] == "answered"


async def test_the_proxy_serves_claude_code_s_permission_prompt(bridge: Served) -> None:
    bridge.person.act = editing({"command": "rm -rf build/tmp"})
    async with proxied(bridge, "legacy") as client:
        result = await client.call_tool(
            "permission_prompt", {"tool_name": "Bash", "input": BASH, "tool_use_id": "toolu_9"}
        )
    allowed = {"behavior": "allow", "updatedInput": {**BASH, "command": "rm -rf build/tmp"}}
    assert json.loads(text(result)) == allowed


async def test_the_proxy_outlives_a_restart_of_the_bridge(tmp_path: Path) -> None:
    bridge = AsyncExitStack()
    first = await bridge.enter_async_context(served(tmp_path))
    port = int(first.url.rsplit(":", 1)[1])
    async with proxied(first, "legacy") as client:
        await bridge.aclose()  # the bridge stops; the proxy stays
        down = await client.call_tool("ask_question", {"question": "Anyone?"})
        # The same database, the same port: the proxy's token is still good.
        async with served(tmp_path, port=port, name="second") as second:
            second.person.act = pressing(Verb.ANSWER, {"answer": "back"})
            up = await client.call_tool("ask_question", {"question": "Back?"})
    assert down.is_error
    assert text(down).startswith(f"the bridge at {first.endpoint} could not be reached: ")
    assert isinstance(up.structured_content, dict) and up.structured_content["answer"] == "back"


async def run_proxy(env: dict[str, str]) -> tuple[int, str]:
    """The proxy run to its end with `env`: its exit status and what it wrote to stderr."""
    process = await asyncio.create_subprocess_exec(
        *PROXY, cwd=ROOT, env={**os.environ, **env}, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        async with asyncio.timeout(PROCESS_WAIT):
            out, err = await process.communicate()
    finally:
        if process.returncode is None:  # timed out: leave no process or pipe behind
            process.kill()
            await process.communicate()
    assert out == b""  # stdout is the protocol's
    assert process.returncode is not None
    return process.returncode, err.decode()


async def test_a_refused_token_stops_the_proxy_with_one_line(bridge: Served) -> None:
    await bridge.tokens.revoke(bridge.name)
    status, said = await run_proxy({"HITL_URL": bridge.url, "HITL_TOKEN": bridge.token})
    assert status == 2
    assert said.splitlines() == [
        f"hitl-bridge mcp: the bridge at {bridge.endpoint} refused the token (wrong or "
        "revoked): make one with `hitl-bridge tokens create --name NAME`"
    ]


async def test_an_unreachable_bridge_stops_the_proxy_with_one_line() -> None:
    status, said = await run_proxy({"HITL_URL": "http://127.0.0.1:9", "HITL_TOKEN": "hitl_x"})
    assert status == 1
    (line,) = said.splitlines()
    assert line.startswith("hitl-bridge mcp: cannot reach the bridge at http://127.0.0.1:9/mcp")


def test_the_target_is_read_from_the_arguments_else_the_environment() -> None:
    env = {"HITL_URL": "http://bridge:8080", "HITL_TOKEN": "hitl_env"}
    assert proxy_target(None, None, env) == ("http://bridge:8080", "hitl_env")
    assert proxy_target("https://b.example", "hitl_arg", env) == ("https://b.example", "hitl_arg")
    with pytest.raises(ConfigurationError, match="needs HITL_TOKEN"):
        proxy_target("http://bridge", None, {})
    with pytest.raises(ConfigurationError, match="must start with http"):
        proxy_target("bridge:8080", "hitl_x", {})
    assert endpoint_of("http://b:8080") == endpoint_of("http://b:8080/mcp/") == "http://b:8080/mcp"
