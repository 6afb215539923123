"""Real MCP servers for the tests: tests/bot/tool_sources/mcp_server.py run over stdio as a process,
or served over streamable HTTP on loopback by uvicorn in the test's event loop."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import uvicorn

from bot.config.agent_file import McpSourceConfig
from bot.tool_sources.elicitation import HumanElicitation
from bot.tool_sources.mcp_tools import McpServerSource
from tests.bot.tool_sources.mcp_server import build_server

SERVER = Path(__file__).with_name("mcp_server.py")
WAIT = 10.0  # bound for what a test awaits from a server process (start-up, a restart)


def stdio(protocol: str = "auto", **extra: Any) -> McpSourceConfig:
    """The test server as an agent file's stdio entry."""
    mcp = {"command": [sys.executable, str(SERVER)], "protocol": protocol, **extra}
    return McpSourceConfig.model_validate({"mcp": mcp})


def http(url: str, protocol: str = "auto", **extra: Any) -> McpSourceConfig:
    return McpSourceConfig.model_validate({"mcp": {"url": url, "protocol": protocol, **extra}})


@asynccontextmanager
async def started(
    config: McpSourceConfig, elicitation: HumanElicitation | None = None, **options: Any
) -> AsyncIterator[McpServerSource]:
    options.setdefault("backoff", (0.05, 0.2))
    source = McpServerSource(config, elicitation=elicitation, **options)
    await source.start()
    try:
        yield source
    finally:
        await source.close()


@asynccontextmanager
async def http_server(port: int = 0) -> AsyncIterator[str]:
    """A fresh test server over streamable HTTP on 127.0.0.1; yields its URL."""
    app = build_server().streamable_http_app()
    config = uvicorn.Config(
        app, host="127.0.0.1", port=port, log_level="critical", lifespan="on", ws="none",
        timeout_graceful_shutdown=1,  # a client's open stream does not hold the stop
    )  # fmt: skip
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    try:
        async with asyncio.timeout(WAIT):
            while not server.started:  # noqa: ASYNC110  (uvicorn says so only by this flag)
                await asyncio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.should_exit = True
        await task


async def until(condition: Callable[[], bool], timeout: float = WAIT) -> None:
    """Wait for `condition` (a server's list change, its restart)."""
    async with asyncio.timeout(timeout):
        while not condition():  # noqa: ASYNC110  (a server process's doing: polled)
            await asyncio.sleep(0.02)
