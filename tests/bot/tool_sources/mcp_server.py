"""An MCP server for the tests, built with the `mcp` SDK: run as a script it serves stdio (the
tests start it as an agent file's `command`); `build_server()` gives a fresh one to serve over
streamable HTTP on loopback.

Its tools: echo, add, fail (an error result), grow (adds a tool and says the list changed),
crash (the process dies mid-call), ask (a form elicitation, either protocol generation),
ask_legacy (a form elicitation sent as its own request, 2025 protocol only), open_link (a URL
elicitation, 2025 protocol only), header (an HTTP header of the call), slow (answers after a
while) and ask_slowly (asks, then takes a while).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated, Literal

import anyio
from mcp.server.elicitation import AcceptedElicitation, ElicitationResult
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, Field


class Release(BaseModel):
    name: str = Field(description="The release's name")
    replicas: int = Field(ge=1, le=10)
    region: Literal["eu", "us"]
    urgent: bool = False


def _ask_release(service: str) -> Elicit[Release]:
    return Elicit(f"Details for the release of {service}?", Release)


def _outcome(answer: ElicitationResult[Release]) -> str:
    if isinstance(answer, AcceptedElicitation):
        return f"accept {answer.data.model_dump_json()}"
    return answer.action


def build_server() -> MCPServer:
    server = MCPServer("test-tools", log_level="WARNING")

    @server.tool()
    def echo(text: str) -> str:
        """Say it back."""
        return text

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def fail(why: str = "it broke") -> str:
        """Always fails."""
        raise ToolError(why)

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Adds the tool `extra`."""

        def extra() -> str:
            """A tool that came later."""
            return "extra!"

        server.add_tool(extra)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await ctx.notify_tools_changed()
        else:
            await ctx.session.send_tool_list_changed()
        return "grown"

    @server.tool()
    async def slow(seconds: float) -> str:
        """Answers after `seconds`."""
        await anyio.sleep(seconds)
        return "done"

    @server.tool()
    async def ask_slowly(service: str, seconds: float, ctx: Context) -> str:
        """Asks (2025 protocol), then takes `seconds` before it answers."""
        answer = _outcome(await ctx.elicit(f"Details for {service}?", Release))
        await anyio.sleep(seconds)
        return answer

    @server.tool()
    def crash() -> str:
        """The server's process dies during the call."""
        sys.stdout.flush()
        os._exit(3)

    @server.tool()
    def ask(
        service: str, answer: Annotated[ElicitationResult[Release], Resolve(_ask_release)]
    ) -> str:
        """Asks for the release's details."""
        return _outcome(answer)

    @server.tool()
    async def ask_legacy(service: str, ctx: Context) -> str:
        """Asks with its own request (2025 protocol)."""
        return _outcome(await ctx.elicit(f"Details for {service}?", Release))

    @server.tool()
    async def open_link(ctx: Context) -> str:
        """Sends the person to a page (2025 protocol)."""
        result = await ctx.elicit_url(
            "Sign in to the deploy system", "https://auth.example.com/login?x=1", "sign-in-1"
        )
        return result.action

    @server.tool()
    def can_elicit(ctx: Context) -> str:
        """Which elicitation modes the client declared."""
        declared = ctx.client_capabilities.elicitation if ctx.client_capabilities else None
        modes = [m for m in ("form", "url") if declared and getattr(declared, m) is not None]
        return ",".join(modes) or "none"

    @server.tool()
    def header(name: str, ctx: Context) -> str:
        """The value of an HTTP header of the call ("" without one)."""
        return (ctx.headers or {}).get(name, "")

    return server


if __name__ == "__main__":
    build_server().run()
