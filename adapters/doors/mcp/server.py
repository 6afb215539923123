"""The MCP door of `serve`: streamable HTTP at /mcp on our one aiohttp server.

Each request's `Origin`, if it has one, is checked first (adapters/doors/mcp/origins.py: 403 unless
allowed), then it is authenticated, from its headers alone (a bearer token of
bot/doors/tokens.py: 401 and one throttled WARNING line otherwise, its body never read), then
served by the `mcp`
SDK's streamable HTTP handler (ASGI, bridged by adapters/doors/asgi.py), with the token's name
in its scope: every tool call asks, reads and waits as that requester (adapters/doors/mcp/tools.py).

The SDK runs stateless: no MCP session lives in a worker's memory, so any worker of several
serves any call (a pending request is found in the store, and `await_answer` may reach another
worker than the call that asked). Responses stream as SSE, which the SDK keeps alive with
pings while a call waits for a person. A call of a tool that does not exist is the protocol
error (-32602, "Unknown tool"), not a tool result.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from importlib import metadata
from typing import Any

import mcp_types as types
from aiohttp import web
from mcp.server import Server, ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError

from adapters.doors.asgi import serve_asgi
from adapters.doors.mcp.loading import PATH
from adapters.doors.mcp.origins import origin_refusal
from adapters.doors.mcp.tools import McpTools, UnknownToolError
from adapters.serve.http_limits import LOG_EVERY, Throttled, one_line
from bot.doors.service import Doors
from bot.doors.tokens import Tokens, bearer
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

# Bytes: the server's own limit. A call's arguments are mostly a form's worth of text, but a
# permission prompt carries the whole input of the call it asks about (a file to write).
MAX_BODY = 1024 * 1024
REQUESTER = "hitl.requester"  # the scope's entry naming who asks (the token's name)
INSTRUCTIONS = (
    "Ask people in Slack or Microsoft Teams and get their answers: questions, approvals, "
    "choices, forms and confirmations. A call waits a while for the answer; if it says pending, "
    "call await_answer with its request_id. permission_prompt is for Claude Code's "
    "--permission-prompt-tool."
)


class McpDoor:
    """The /mcp routes (see the module's docstring). `start()` before serving, `close()` after
    (once: the SDK's manager does not run twice)."""

    def __init__(
        self, doors: Doors, tokens: Tokens, *, default_to: str | None = None,
        origins: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        self.tokens = tokens
        self.origins = origins  # the `Origin`s allowed (adapters/doors/mcp/origins.py)
        self.tools = McpTools(doors, default_to=default_to)
        self._schemas = {tool.name: tool.input_schema for tool in self.tools.definitions()}
        self.server: Server[Any] = Server(
            "hitl-bridge", version=bridge_version(), instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools, on_call_tool=self._call_tool,
            get_tool_input_schema=self._schemas.get,
        )  # fmt: skip
        # The SDK's DNS rebinding protection compares `Origin` with `Host`-derived lists of its
        # own; `handle` checks `Origin` first instead, against our setting (origins.py).
        security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        self.manager = StreamableHTTPSessionManager(
            self.server, stateless=True, security_settings=security,
            max_request_body_size=MAX_BODY,
        )  # fmt: skip
        self._refusals = Throttled(log, LOG_EVERY)
        self._stop = asyncio.Event()
        self._running: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()

    def mount(self, app: web.Application) -> None:
        for method in ("POST", "GET", "DELETE"):
            app.router.add_route(method, PATH, self.handle)

    async def start(self) -> None:
        """Run the SDK's request manager (in a task of its own: its task group is entered and
        left in one task, whichever tasks call start and close)."""
        if self._running is not None:
            return
        self._running = asyncio.create_task(self._run(), name="hitl-mcp")
        ready = asyncio.ensure_future(self._ready.wait())
        await asyncio.wait((ready, self._running), return_when=asyncio.FIRST_COMPLETED)
        ready.cancel()
        if self._running.done():
            self._running.result()  # its failure, raised here

    async def _run(self) -> None:
        async with self.manager.run():
            self._ready.set()
            await self._stop.wait()

    async def close(self) -> None:
        """Stop serving. Calls still waiting end: an asking tool's request stays (for
        await_answer, on any worker), a permission prompt's is withdrawn (its caller is gone)."""
        self._stop.set()
        self._ready.clear()
        if self._running is not None:
            with contextlib.suppress(Exception):
                await self._running

    # -- HTTP --------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        refused = origin_refusal(request, self.origins)  # before the token and the body
        if refused is not None:
            self._refusals.log("MCP: refused a request from Origin %s",
                               one_line(request.headers.get("Origin"), 100))  # fmt: skip
            return refused
        presented = bearer(request.headers.get("Authorization"))
        try:
            token = await self.tokens.check(presented) if presented is not None else None
        except StoreUnavailableError as err:
            log.warning("MCP: the store is unavailable: %s", err)
            return _error("unavailable", "the bridge cannot reach its database now", 503)
        if token is None:
            self._refusals.log(
                "MCP: refused a request without a valid token (%s %s from %s)",
                request.method, one_line(request.path, 100), request.remote,
            )  # fmt: skip
            return _error("unauthorized", "a valid bearer token is needed", 401,
                          {"WWW-Authenticate": 'Bearer realm="hitl-bridge"'})  # fmt: skip
        if request.method != "POST":
            # Stateless: no session to delete, nothing ever sent on a stream of its own. The
            # spec's answer to both is 405 (clients then use POST alone), after authentication:
            # `hitl-bridge mcp` checks its token with a GET.
            return _error("method_not_allowed", "POST a JSON-RPC message to /mcp", 405,
                          {"Allow": "POST"})  # fmt: skip
        if not self._ready.is_set():
            return _error("unavailable", "the MCP server is not running", 503)
        return await serve_asgi(self.manager.handle_request, request, {REQUESTER: token.name})

    # -- MCP ---------------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self.tools.definitions())

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        try:
            return await self.tools.call(_requester(ctx), params.name, params.arguments or {})
        except UnknownToolError as err:
            raise MCPError(types.INVALID_PARAMS, str(err)) from None


def _requester(ctx: ServerRequestContext[Any]) -> str:
    """Who asks: the name `handle` put in the HTTP request's scope."""
    scope = getattr(ctx.request, "scope", None)
    requester = scope.get(REQUESTER) if isinstance(scope, Mapping) else None
    if not isinstance(requester, str):  # only a request that came past `handle` gets here
        raise MCPError(types.INVALID_REQUEST, "the request was not authenticated")
    return requester


def _error(
    code: str, message: str, status: int, headers: Mapping[str, str] | None = None
) -> web.Response:
    return web.json_response({"error": code, "message": message}, status=status, headers=headers)


def bridge_version() -> str:
    """This package's version, as the MCP servers tell clients."""
    try:
        return metadata.version("hitl-bridge")
    except metadata.PackageNotFoundError:
        return "0"
