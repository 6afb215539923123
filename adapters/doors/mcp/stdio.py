"""`hitl-bridge mcp`: the MCP door over stdio, for local clients (Claude Code, desktop apps),
as a proxy to a running `serve`'s /mcp.

It needs no database and no chat platform: only the bridge's URL and a token (HITL_URL and
HITL_TOKEN, or --url and --token). It checks both before serving (a refused token or an
unreachable bridge is one line and an exit status, not a silent server), then serves stdio
with the `mcp` SDK and forwards each tools/list and tools/call to the bridge with the SDK's
streamable HTTP client: the same tools, the same results, the same errors. Everything asked
through it is asked as the token's name.

Run as `python -m adapters.doors.mcp.stdio` it does the same, from the environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import Awaitable, Mapping
from typing import Any, TypeVar

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from adapters.doors.mcp.loading import PATH
from adapters.doors.mcp.server import bridge_version
from adapters.serve.http_limits import one_line
from adapters.serve.startup import StartupError, explain
from bot import ConfigurationError
from bot.tool_sources.mcp_wire import connection_lost

log = logging.getLogger(__name__)

CHECK_TIMEOUT = 10.0  # seconds for the bridge to answer the start-up check
T = TypeVar("T")
CLIENT_INFO = types.Implementation(name="hitl-bridge-mcp-stdio", version=bridge_version())


def proxy_target(
    url: str | None, token: str | None, environ: Mapping[str, str], command: str = "mcp"
) -> tuple[str, str]:
    """The bridge's URL and the token: as given, else HITL_URL and HITL_TOKEN;
    ConfigurationError naming what is missing (and the `hitl-bridge` command that needs it)."""
    url = url or environ.get("HITL_URL", "")
    token = token or environ.get("HITL_TOKEN", "")
    missing = [name for name, value in (("HITL_URL", url), ("HITL_TOKEN", token)) if not value]
    if missing:
        raise ConfigurationError(
            f"hitl-bridge {command} needs {' and '.join(missing)} (or --url/--token): the URL of a "
            "running `hitl-bridge serve` and a token from `hitl-bridge tokens create`"
        )
    if not url.startswith(("http://", "https://")):
        raise ConfigurationError(f"HITL_URL must start with http:// or https:// ({url[:80]})")
    return url, token


def endpoint_of(url: str) -> str:
    """The /mcp endpoint of the bridge at `url` (given with or without it)."""
    base = url.rstrip("/")
    return base if base.endswith(PATH) else base + PATH


async def run_stdio_proxy(url: str, token: str) -> int:
    """Serve stdio until the client closes it; 0 then. StartupError or ConfigurationError if
    the bridge cannot be reached or refuses the token at the start."""
    endpoint = endpoint_of(url)
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    async with http:
        await check_bridge(http, endpoint)
        remote = Remote(http, endpoint)
        try:
            try:
                first = await remote.client()
            except Exception as err:
                raise StartupError(f"the connection to {endpoint} failed: {_cause(err)}") from err
            server = _proxy(remote, first.instructions)
            async with stdio_server() as (read, write):
                await server.run(read, write, server.create_initialization_options())
        finally:
            await remote.close()
    return 0


class Remote:
    """The bridge's MCP server through the SDK's client, connected again after it was lost
    (the bridge restarted, the network failed): the client's transport does not outlive a
    failed request, and the proxy must. Each connection is held by a task of its own, so its
    end is that task's, never the proxy's."""

    def __init__(self, http: httpx2.AsyncClient, endpoint: str) -> None:
        self.http = http
        self.endpoint = endpoint
        self._client: Client | None = None
        self._holder: asyncio.Task[None] | None = None
        self._closing = asyncio.Event()
        self._lock = asyncio.Lock()

    async def client(self) -> Client:
        """The connected client, connecting first if there is none (its error raised)."""
        async with self._lock:
            if self._client is None or self._holder is None or self._holder.done():
                self._client = await self._connect()
            return self._client

    async def _connect(self) -> Client:
        connected: asyncio.Future[Client] = asyncio.get_running_loop().create_future()

        async def hold() -> None:
            try:
                transport = streamable_http_client(self.endpoint, http_client=self.http)
                async with Client(transport, cache=None, client_info=CLIENT_INFO) as client:
                    connected.set_result(client)
                    await self._closing.wait()
            except Exception as err:
                if not connected.done():
                    connected.set_exception(err)
                else:  # the calls in flight fail on their own; the next one connects again
                    log.warning("lost the bridge at %s: %s", self.endpoint, _cause(err))
            finally:
                if not connected.done():  # cancelled while connecting
                    connected.cancel()

        self._holder = asyncio.create_task(hold(), name="hitl-mcp-remote")
        return await connected

    async def lost_if_failed(self, client: Client, call: Awaitable[T]) -> T:
        """`call` on `client`; if it fails for the connection, the next call connects anew
        (the failed transport's end may not have reached its holder yet)."""
        try:
            return await call
        except Exception as err:
            if _lost(err) and client is self._client and self._holder is not None:
                self._client = None
                self._holder.cancel()
            raise

    async def close(self) -> None:
        self._closing.set()
        if self._holder is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(self._holder, CHECK_TIMEOUT)


def _cause(err: BaseException) -> str:
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    return one_line(err) or type(err).__name__


async def check_bridge(http: httpx2.AsyncClient, endpoint: str) -> None:
    """Whether the bridge is there and takes the token: a GET of /mcp, which authenticates
    first and asks nothing (the MCP client would say only "Server returned an error")."""
    try:
        response = await http.get(endpoint, timeout=CHECK_TIMEOUT)
    except httpx2.HTTPError as err:
        raise StartupError(f"cannot reach the bridge at {endpoint}: {_cause(err)}") from None
    if response.status_code == 401:
        raise ConfigurationError(
            f"the bridge at {endpoint} refused the token (wrong or revoked): make one with "
            "`hitl-bridge tokens create --name NAME`"
        )
    if response.status_code == 404:
        raise StartupError(f"{endpoint} is not found: is HITL_URL a hitl-bridge serve?")
    if response.status_code >= 500:
        raise StartupError(f"the bridge at {endpoint} answered {response.status_code}")


def _proxy(remote: Remote, instructions: str | None) -> Server[Any]:
    """A stdio server whose tools are the bridge's. A call the bridge could not take (it was
    unreachable, or the connection was lost during it) is a tool error the model reads; a
    listing is tried once more on a fresh connection (asking it twice changes nothing)."""
    unreachable = f"the bridge at {remote.endpoint} could not be reached"

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        cursor = params.cursor if params else None
        try:
            return await _listing(remote, cursor)
        except Exception as err:
            if not _lost(err):
                raise
        try:
            return await _listing(remote, cursor)  # on a fresh connection
        except Exception as err:
            if not _lost(err):
                raise
            raise MCPError(types.INTERNAL_ERROR, f"{unreachable}: {_cause(err)}") from err

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            client = await remote.client()
            called = await remote.lost_if_failed(
                client, client.call_tool(params.name, params.arguments or {})
            )
        except Exception as err:
            if not _lost(err):
                raise  # the bridge's own error, passed on as it is
            log.warning("the call of %s failed: %s", params.name, _cause(err))
            text = f"{unreachable}: {_cause(err)}"
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)
        return types.CallToolResult(
            content=called.content, structured_content=called.structured_content,
            is_error=called.is_error,
        )  # fmt: skip

    return Server(
        "hitl-bridge", version=bridge_version(), instructions=instructions,
        on_list_tools=list_tools, on_call_tool=call_tool,
    )  # fmt: skip


async def _listing(remote: Remote, cursor: str | None) -> types.ListToolsResult:
    client = await remote.client()
    page = await remote.lost_if_failed(client, client.list_tools(cursor=cursor))
    return types.ListToolsResult(tools=page.tools, next_cursor=page.next_cursor)


def _lost(err: BaseException) -> bool:
    """Whether `err` means the connection failed (not that the bridge refused the request)."""
    return not isinstance(err, MCPError) or connection_lost(err)


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)  # stdout is the protocol's
    try:
        return asyncio.run(run_stdio_proxy(*proxy_target(None, None, os.environ)))
    except KeyboardInterrupt:
        return 130
    except Exception as err:
        explained = explain(err)
        print(f"hitl-bridge mcp: {explained.line}", file=sys.stderr)
        return explained.status


if __name__ == "__main__":
    sys.exit(main())
