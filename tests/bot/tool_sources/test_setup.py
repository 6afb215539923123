"""The agent file's tools behind one handler: rules per tool, the gate's hook point, and the
channel offering what the servers offer now."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bot import AIChannel, HumanInputToolHandler, ToolHandler
from bot.agent.scripted import ScriptedAIProvider
from bot.config.agent_file import AgentConfig, load_agent_file
from bot.errors import ConfigurationError, UnservedToolCallError
from bot.tool_sources.setup import AgentTools, ToolRule, build_tool_handler
from bot.tools import AITool
from tests.bot.tool_sources.servers import SERVER, until

pytestmark = pytest.mark.subprocess  # the MCP test server runs as a process over stdio

MODULE = "tests.bot.tool_sources.sample_tools"


def agent_file(tmp_path: Path, tools: str) -> AgentConfig:
    path = tmp_path / "agent.yaml"
    path.write_text(f"human_tools: none\ntools:\n{tools}")
    return load_agent_file(path)


def mcp_entry(extra: str = "") -> str:
    return f"  - mcp:\n      command: [{sys.executable}, {SERVER}]\n{extra}"


async def test_each_tool_s_rule_comes_from_its_source_s_entry(tmp_path: Path) -> None:
    config = agent_file(tmp_path, mcp_entry("    approval: [add]\n    redact: [token]\n")
                        + f"  - python: {MODULE}:restart_service\n    approval: true\n"
                        + f"  - python: {MODULE}:measure_load\n")  # fmt: skip
    tools = AgentTools.from_config(config)
    await tools.start()
    try:
        assert tools.approval_for("add") == ToolRule(True, frozenset({"token"}))
        assert tools.approval_for("echo") == ToolRule(False, frozenset({"token"}))
        assert tools.approval_for("restart_service") == ToolRule(True, frozenset())
        assert tools.approval_for("measure_load") == ToolRule(False, frozenset())
        assert tools.approval_for("nothing") is None
        names = [tool.name for tool in tools.catalog()]
        assert names[-2:] == ["restart_service", "measure_load"] and "add" in names
        assert await tools.call("add", {"a": 1, "b": 2}) == "3"
        with pytest.raises(UnservedToolCallError):
            await tools.call("nothing", {})
    finally:
        await tools.close()


async def test_a_source_s_entry_sets_what_its_grants_allow(tmp_path: Path) -> None:
    config = agent_file(tmp_path, f"  - python: {MODULE}:restart_service\n    approval: true\n"
                        "    grant_minutes: 15\n    grant_scope: service\n"
                        f"  - python: {MODULE}:measure_load\n    grant_minutes: 0\n")  # fmt: skip
    tools = AgentTools.from_config(config)
    await tools.start()
    try:
        assert tools.approval_for("restart_service") == ToolRule(
            True, frozenset(), grant_seconds=900.0, grant_scope=frozenset({"service"})
        )
        assert tools.approval_for("measure_load") == ToolRule(False, frozenset(), grant_seconds=0.0)
    finally:
        await tools.close()


async def test_an_unknown_name_under_approval_is_an_error_at_its_line(tmp_path: Path) -> None:
    config = agent_file(tmp_path, mcp_entry("    approval:\n      - add\n      - deplyo\n"))
    tools = AgentTools.from_config(config)
    with pytest.raises(ConfigurationError) as failed:
        await tools.start()
    message = str(failed.value)
    assert message.startswith(
        f"{config.file}:7: tools[0].approval[1]: unknown tool 'deplyo': MCP server `"
    )
    assert "offers echo, add, fail, grow" in message and "\n" not in message
    assert not any(getattr(source, "running", False) for source in tools.sources)  # stopped


async def test_an_unknown_name_for_a_python_tool(tmp_path: Path) -> None:
    entry = f"  - python: {MODULE}:restart_service\n    approval: [restart]\n"
    config = agent_file(tmp_path, entry)
    with pytest.raises(ConfigurationError) as failed:
        await AgentTools.from_config(config).start()
    assert str(failed.value) == (
        f"{config.file}:4: tools[0].approval[0]: unknown tool 'restart': "
        f"Python tool `{MODULE}:restart_service` offers restart_service"
    )


async def test_the_gate_wraps_the_one_handler(tmp_path: Path) -> None:
    config = agent_file(tmp_path, f"  - python: {MODULE}:restart_service\n    approval: true\n")
    tools = AgentTools.from_config(config)
    seen: list[tuple[str, ToolRule | None]] = []

    def gate(inner: ToolHandler, offered: Mapping[str, AITool], rules: AgentTools) -> ToolHandler:
        assert list(offered) == ["restart_service"] and rules is tools

        async def gated(name: str, arguments: dict[str, Any]) -> str:
            seen.append((name, rules.approval_for(name)))
            return await inner(name, arguments)

        return gated

    handler = build_tool_handler(tools, gate=gate)
    assert (await handler("restart_service", {"service": "ledger"})).startswith("restarted")
    assert seen == [("restart_service", ToolRule(True, frozenset()))]
    assert build_tool_handler(tools) == tools.call  # no gate: the calls run as made


async def test_the_channel_offers_the_servers_tools_as_they_are_now(tmp_path: Path) -> None:
    tools = AgentTools.from_config(agent_file(tmp_path, mcp_entry()))
    await tools.start()
    provider = ScriptedAIProvider(script=[], call_tools=True)  # the first tool, once
    channel = AIChannel(
        "ai", provider=provider, human_input_handler=HumanInputToolHandler(),
        tool_handler=build_tool_handler(tools), tool_catalog=tools.catalog,
    )  # fmt: skip
    try:
        reply = await channel.respond("room-1", "go", actor_id="alice")
        assert "I'll call echo." in reply and "- demo" in reply  # echo's text, made up
        assert "extra" not in channel.offered_tools
        await tools.call("grow", {})
        await until(lambda: "extra" in channel.offered_tools)
    finally:
        await tools.close()
