"""The agent file: it loads, each MCP server it names starts and lists its tools (each a line
of its own), and every tool its `approval` lists is offered."""

from __future__ import annotations

import asyncio

from adapters.ops.doctor.results import Result, failed, passed, skipped
from adapters.serve.settings import Settings
from bot import ConfigurationError
from bot.tool_sources.sources import ToolSource, ToolSourceError

AGENT = "agent file"
START_SECONDS = 15.0  # for each server to start: within the doctor's time for a check
FILE_FIX = "correct the agent file where the line says (docs/agent-file.md)"
SERVER_FIX = (
    "correct this server's `command` (or `url`) in the agent file, or make the server start"
)


def model_of(settings: Settings) -> str:
    """The model `serve` asks: the agent file's `model`, else HITL_MODEL (a file that does not
    load is the agent file's check's to tell)."""
    from bot.config.agent_file import load_agent_file

    if settings.agent_file is None:
        return settings.model
    try:
        return load_agent_file(settings.agent_file).model or settings.model
    except ConfigurationError:
        return settings.model


async def agent_file(settings: Settings) -> list[Result]:
    from bot.config.agent_file import load_agent_file
    from bot.tool_sources.setup import AgentTools

    path = settings.agent_file
    if path is None:
        return [skipped(AGENT, "HITL_AGENT_FILE is unset: the built-in agent, no tools of its own")]
    try:
        config = load_agent_file(path)
        tools = AgentTools.from_config(config, start_timeout=START_SECONDS)  # imports callables
    except ConfigurationError as err:
        return [failed(AGENT, str(err), FILE_FIX)]
    started = await asyncio.gather(*(_started(source) for source in tools.sources))
    try:
        if all(result.status == "ok" for result in started):
            tools.check()  # `approval` names tools the servers offer
    except ConfigurationError as err:
        return [failed(AGENT, str(err), FILE_FIX), *started]
    finally:
        await tools.close()
    return [passed(AGENT, f"{path} loads: {len(tools.sources)} tool source(s)"), *started]


async def _started(source: ToolSource) -> Result:
    """One source started (a Python callable is already imported) and its tools listed; it
    is closed with the others once every one has been asked."""
    try:
        await source.start()
    except ToolSourceError as err:
        return failed(source.label, str(err), SERVER_FIX)
    names = [tool.name for tool in source.tools()]
    listed = ", ".join(names) if names else "none"
    return passed(source.label, f"started; {len(names)} tool(s): {listed}")
