"""Tools from real MCP servers (the `mcp` SDK on both ends): over stdio, started as processes,
and over streamable HTTP on loopback; both protocol generations."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from bot.config.agent_file import McpSourceConfig
from bot.errors import ToolFailedError, UnservedToolCallError
from bot.tool_sources.mcp_tools import McpServerSource
from bot.tool_sources.sources import ToolSourceError
from tests.bot.tool_sources.servers import http, http_server, started, stdio, until

pytestmark = pytest.mark.subprocess  # the MCP test server runs as a process over stdio

PROTOCOLS = ["auto", "legacy"]  # 2026-07-28 when the server speaks it; the 2025 handshake


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_stdio_server_s_tools_are_listed_with_their_schemas_and_called(
    protocol: str,
) -> None:
    async with started(stdio(protocol)) as source:
        tools = {tool.name: tool for tool in source.tools()}
        assert {"echo", "add", "fail", "grow", "ask"} <= set(tools)
        add = tools["add"]
        assert add.description == "Add two integers."
        assert add.parameters["properties"]["a"]["type"] == "integer"
        assert add.parameters["required"] == ["a", "b"]
        assert await source.call("add", {"a": 2, "b": 40}) == "42"
        assert await source.call("echo", {"text": "héllo"}) == "héllo"
        with pytest.raises(ToolFailedError) as failed:
            await source.call("fail", {"why": "the disk is full"})
        assert failed.value.reason == "Error executing tool fail: the disk is full"
        with pytest.raises(UnservedToolCallError):
            await source.call("nothing_like_it", {})


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_streamable_http_server_on_loopback_with_headers(protocol: str) -> None:
    async with http_server() as url:
        config = http(url, protocol, headers={"X-Team": "payments"})
        async with started(config) as source:
            assert "echo" in {tool.name for tool in source.tools()}
            assert await source.call("echo", {"text": "over http"}) == "over http"
            assert await source.call("header", {"name": "x-team"}) == "payments"
            with pytest.raises(ToolFailedError, match="it broke"):
                await source.call("fail", {})


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_list_change_is_followed(protocol: str) -> None:
    async with started(stdio(protocol)) as source:
        assert "extra" not in {tool.name for tool in source.tools()}
        assert await source.call("grow", {}) == "grown"
        await until(lambda: "extra" in {tool.name for tool in source.tools()})
        assert await source.call("extra", {}) == "extra!"


async def test_a_list_change_over_http_is_followed() -> None:
    async with http_server() as url, started(http(url)) as source:
        await source.call("grow", {})
        await until(lambda: "extra" in {tool.name for tool in source.tools()})


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_a_server_that_dies_mid_call_fails_the_call_and_is_started_again(
    protocol: str,
) -> None:
    async with started(stdio(protocol)) as source:
        with pytest.raises(ToolFailedError) as failed:
            await source.call("crash", {})
        assert "stopped during the call to 'crash'" in failed.value.reason
        assert "being started again" in failed.value.reason
        await until(lambda: source.restarts == 1 and source.running)
        assert await source.call("echo", {"text": "back"}) == "back"


@pytest.mark.parametrize("protocol", PROTOCOLS)
async def test_an_http_server_that_went_away_fails_a_call_and_is_reconnected(
    protocol: str,
) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    async with http_server(port) as url:
        source = McpServerSource(http(url, protocol), backoff=(0.05, 0.2))
        await source.start()
    try:
        with pytest.raises(ToolFailedError) as failed:
            await source.call("echo", {"text": "anyone?"})
        assert f"MCP server `{url}` stopped during the call to 'echo'" in failed.value.reason
        async with http_server(port):
            await until(lambda: source.restarts >= 1 and source.running)
            assert await source.call("echo", {"text": "back"}) == "back"
    finally:
        await source.close()


async def test_a_call_while_the_server_is_down_waits_for_it_or_fails_readably(
    tmp_path: Path,
) -> None:
    async with started(stdio(), reconnect_wait=0.0, backoff=(30.0, 30.0)) as source:
        with pytest.raises(ToolFailedError):
            await source.call("crash", {})
        with pytest.raises(ToolFailedError) as down:
            await source.call("echo", {"text": "anyone?"})
        assert "is not running (it is being started again)" in down.value.reason


async def test_a_server_that_cannot_start_is_named_in_one_line() -> None:
    script = "import sys; print('boom: OPS_TOKEN is not set', file=sys.stderr); sys.exit(1)"
    config = McpSourceConfig.model_validate(
        {"mcp": {"command": [sys.executable, "-c", script], "name": "ops"}}
    )
    with pytest.raises(ToolSourceError) as failed:
        async with started(config):
            pass
    message = str(failed.value)
    assert "\n" not in message
    assert message.startswith("MCP server `ops` did not start: ")
    assert message.endswith("(it said: boom: OPS_TOKEN is not set)")


async def test_a_missing_command_is_named(tmp_path: Path) -> None:
    config = McpSourceConfig.model_validate({"mcp": {"command": ["no-such-ops-server", "--x"]}})
    with pytest.raises(ToolSourceError) as failed:
        async with started(config, folder=tmp_path):
            pass
    assert str(failed.value).startswith(
        "MCP server `no-such-ops-server --x` did not start: No such file or directory"
    )


async def test_a_server_that_never_answers_is_given_up_on() -> None:
    config = McpSourceConfig.model_validate(
        {"mcp": {"command": [sys.executable, "-c", "import time; time.sleep(30)"]}}
    )
    with pytest.raises(ToolSourceError, match=r"did not start: no answer within 0.5s"):
        async with started(config, start_timeout=0.5):
            pass


async def test_an_unreachable_http_server_is_named() -> None:
    with pytest.raises(ToolSourceError) as failed:
        async with started(http("http://127.0.0.1:9/mcp"), start_timeout=5):
            pass
    assert str(failed.value).startswith("MCP server `http://127.0.0.1:9/mcp` did not start: ")


async def test_a_call_that_takes_too_long_is_cancelled_and_said_so() -> None:
    async with started(stdio(call_timeout_seconds=0.5)) as source:
        with pytest.raises(ToolFailedError) as failed:
            await source.call("slow", {"seconds": 30})
        assert str(failed.value) == (
            f"{source.label} did not answer the call to 'slow' within 0.5 s; it was "
            "cancelled, and may or may not have taken effect"
        )
        assert await source.call("echo", {"text": "still here"}) == "still here"
