"""Python callables as tools: their schema from the signature, sync ones in a thread."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from bot.config.agent_file import parse_agent_file
from bot.errors import ConfigurationError, ToolRefusedError
from bot.tool_sources.python_tools import PythonTool, PythonToolSource
from tests.bot.tool_sources import sample_tools

MODULE = "tests.bot.tool_sources.sample_tools"


async def test_a_sync_callable_s_schema_comes_from_its_hints_and_it_runs_in_a_thread() -> None:
    tool = PythonTool(sample_tools.restart_service)
    definition = tool.definition
    assert definition.name == "restart_service"
    assert definition.description == "Restart a service."
    assert definition.parameters["required"] == ["service"]
    properties = definition.parameters["properties"]
    assert properties["service"]["description"] == "The service to restart."
    assert properties["mode"]["enum"] == ["graceful", "hard"]
    assert properties["mode"]["default"] == "graceful"
    result = await tool({"service": "ledger", "mode": "hard"})
    assert result.startswith("restarted ledger (hard) on ")
    assert not result.endswith(threading.current_thread().name)  # not the event loop's


async def test_an_async_callable_is_awaited_and_its_result_given_as_json() -> None:
    tool = PythonTool(sample_tools.measure_load, name="load")
    assert tool.definition.name == "load"
    assert tool.definition.parameters["properties"]["window_seconds"]["type"] == "integer"
    assert await tool({"service": "ledger", "window_seconds": 10}) == (
        '{"service": "ledger", "requests_per_second": 15.0}'
    )


async def test_arguments_that_do_not_fit_are_refused_with_what_is_wrong() -> None:
    tool = PythonTool(sample_tools.restart_service)
    with pytest.raises(ToolRefusedError) as refused:
        await tool({"service": "ledger", "mode": "gentle", "force": True})
    assert "Invalid arguments for 'restart_service'" in refused.value.reason
    assert "mode" in refused.value.reason and "force" in refused.value.reason


def test_a_callable_without_named_arguments_cannot_be_a_tool() -> None:
    with pytest.raises(ValueError, match=r"\*args or \*\*kwargs"):
        PythonTool(sample_tools.spread)


def agent(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "agent.yaml"
    path.write_text(f"system_prompt: ops\ntools:\n  - python: {entry}\n    approval: true\n")
    return path


async def test_an_agent_file_entry_is_imported_and_served(tmp_path: Path) -> None:
    path = agent(tmp_path, f"{MODULE}:restart_service")
    config = parse_agent_file(path.read_text(), path)
    source = PythonToolSource.load(config, 0)
    assert [tool.name for tool in source.tools()] == ["restart_service"]
    assert (await source.call("restart_service", {"service": "ledger"})).startswith(
        "restarted ledger (graceful)"
    )


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("tests.bot.nowhere:restart", "cannot import tests.bot.nowhere:restart: "
         "ModuleNotFoundError: No module named 'tests.bot.nowhere'"),
        (f"{MODULE}:missing", f"cannot import {MODULE}:missing: AttributeError"),
        (f"{MODULE}:NOT_CALLABLE", f"{MODULE}:NOT_CALLABLE is not callable"),
        (f"{MODULE}:spread", "cannot be a tool: ValueError: spread takes *args or **kwargs"),
    ],
)  # fmt: skip
def test_an_entry_that_cannot_be_a_tool_is_an_error_at_its_line(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = agent(tmp_path, entry)
    config = parse_agent_file(path.read_text(), path)
    with pytest.raises(ConfigurationError) as failed:
        PythonToolSource.load(config, 0)
    assert str(failed.value).startswith(f"{path}:3: tools[0].python: {message}")
    assert "\n" not in str(failed.value)
