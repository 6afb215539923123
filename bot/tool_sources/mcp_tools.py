"""Tools from MCP servers, through the official `mcp` SDK (with mcp_wire.py, its plumbing).

One `McpServerSource` per `mcp:` entry of the agent file: a server run over stdio (started with
the bridge, stopped with it) or reached over streamable HTTP. It lists the server's tools (their
JSON schemas go to the model as they are), follows the server's list changes, and calls tools
with the SDK's session. Both protocol generations the SDK speaks work: the 2025 handshake
(server-to-client requests, `notifications/tools/list_changed`) and 2026-07-28 (input-required
results, `subscriptions/listen`).

A server that cannot start fails `start()` with one line naming it. One that stops later (its
process exits, its HTTP session is gone) fails the calls in flight with an error result the
model reads, and is started again with a growing backoff; meanwhile calls wait a little for it,
then fail the same way.

When a server asks for input during a call (`elicitation/create`), the actor of that call is
asked (bot/tool_sources/elicitation.py). On a 2026-07-28 connection the question arrives inside the
call, so the call is known; on a 2025 one it arrives on its own, and is taken to be for the
call in flight on that server (or, with several, the latest one, when they all come from the
same person in the same conversation; otherwise nobody can be told apart and it is cancelled).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import sys
import time
from collections import deque
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client import ClientRequestContext, Transport
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from bot.config.agent_file import TOOL_NAME, McpSourceConfig
from bot.errors import ToolFailedError, UnservedToolCallError
from bot.human_tools.elicitation import ElicitInputArgs
from bot.tool_sources.elicitation import ElicitOutcome, HumanElicitation
from bot.tool_sources.mcp_wire import StderrTail, connection_lost, reason, text_of_result, watched
from bot.tool_sources.sources import ToolSourceError
from bot.tools import AITool
from bot.tools.context import ToolCallContext, current_tool_context

log = logging.getLogger(__name__)

START_TIMEOUT_SECONDS = 30.0
RECONNECT_WAIT_SECONDS = 5.0  # how long a call waits for a server being restarted
BACKOFF_SECONDS = (0.5, 30.0)  # first and longest pause before starting a stopped server again
STDERR_LINES = 20
# A call may wait on a person (an elicitation) for as long as a request lasts.
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=3600.0)


@dataclass(eq=False)
class _Call:
    """A tool call in flight on the server, for the elicitations it may raise."""

    tool: str
    context: ToolCallContext | None
    timeout: float
    started: float = field(default_factory=time.monotonic)
    elicitations: set[asyncio.Task[Any]] = field(default_factory=set)
    deadline: asyncio.Timeout | None = None

    def asking(self, task: asyncio.Task[Any]) -> None:
        """A question to a person began: the server's time stops while they answer."""
        if not self.elicitations and self.deadline is not None:
            self.deadline.reschedule(None)
        self.elicitations.add(task)

    def answered(self, task: asyncio.Task[Any]) -> None:
        self.elicitations.discard(task)
        if not self.elicitations and self.deadline is not None:
            self.deadline.reschedule(asyncio.get_running_loop().time() + self.timeout)


_in_call: contextvars.ContextVar[_Call | None] = contextvars.ContextVar("mcp_call", default=None)


class McpServerSource:
    """One MCP server's tools (see the module's docstring)."""

    def __init__(
        self,
        config: McpSourceConfig,
        *,
        folder: Path | None = None,
        elicitation: HumanElicitation | None = None,
        start_timeout: float = START_TIMEOUT_SECONDS,
        reconnect_wait: float = RECONNECT_WAIT_SECONDS,
        backoff: tuple[float, float] = BACKOFF_SECONDS,
    ) -> None:
        self.config = config
        self.server = config.mcp
        self.folder = folder or Path.cwd()
        self.elicitation = elicitation
        self.start_timeout = start_timeout
        self.reconnect_wait = reconnect_wait
        self.backoff = backoff
        self.restarts = 0  # how many times it was started again after stopping
        self._tools: list[AITool] = []
        self._client: Client | None = None
        self._up = asyncio.Event()
        self._lost = asyncio.Event()
        self._stale = asyncio.Event()
        self._closing = False
        self._supervisor: asyncio.Task[None] | None = None
        self._first: asyncio.Future[None] | None = None
        self._calls: set[_Call] = set()
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)

    @property
    def label(self) -> str:
        return self.config.label

    def tools(self) -> list[AITool]:
        return list(self._tools)

    @property
    def running(self) -> bool:
        return self._client is not None

    # -- the connection's life ---------------------------------------------------------------

    async def start(self) -> None:
        """Start (or connect to) the server and list its tools; ToolSourceError if it cannot."""
        if self._supervisor is not None:
            return
        loop = asyncio.get_running_loop()
        self._first = loop.create_future()
        # In a context of its own: what the server sends outside a call (a 2025 elicitation)
        # must not look as if it came from the turn that happened to start the server.
        self._supervisor = loop.create_task(
            self._supervise(), name=f"mcp {self.label}", context=contextvars.Context()
        )
        try:
            async with asyncio.timeout(self.start_timeout):
                await asyncio.shield(self._first)
        except TimeoutError:
            await self.close()
            raise ToolSourceError(
                f"{self.label} did not start: no answer within {self.start_timeout:g}s"
                + self._said()
            ) from None
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Stop the server (close the connection); calls in flight fail."""
        self._closing = True
        self._lost.set()
        task, self._supervisor = self._supervisor, None
        if task is None:
            return
        if self._client is None:  # starting (again), or waiting to: nothing to finish
            task.cancel()
        done, _ = await asyncio.wait([task], timeout=10)
        if not done:
            task.cancel()
            await asyncio.wait([task])
        error = None if task.cancelled() else task.exception()
        if error is not None:
            log.error("%s did not close cleanly: %s", self.label, reason(error))

    async def _supervise(self) -> None:
        failures = 0
        while not self._closing:
            self._lost.clear()
            try:
                await self._connected_until_lost()
                failures = 0
            except Exception as err:
                first = self._first
                if first is not None and not first.done():
                    said = f"{self.label} did not start: {reason(err)}{self._said()}"
                    first.set_exception(ToolSourceError(said))
                    return
                log.warning("%s stopped: %s%s", self.label, reason(err), self._said())
                failures += 1
            if self._closing:
                return
            if failures == 0:
                log.warning("%s stopped%s", self.label, self._said())
                failures = 1
            delay = min(self.backoff[1], self.backoff[0] * 2 ** (failures - 1))
            log.warning("%s: starting it again in %gs", self.label, delay)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(delay):
                    await self._wait_closing()
            if not self._closing:
                self.restarts += 1

    async def _wait_closing(self) -> None:
        while not self._closing:
            await self._lost.wait()
            self._lost.clear()

    async def _connected_until_lost(self) -> None:
        async with AsyncExitStack() as stack:
            client = await stack.enter_async_context(self._client_for(stack))
            helpers = [asyncio.create_task(self._follow_changes(client))]
            try:
                if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                    # Listening before listing: a change in between is not missed.
                    listening = asyncio.Event()
                    helpers.append(asyncio.create_task(self._listen(client, listening)))
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(self.start_timeout):
                            await listening.wait()
                await self._refresh(client)
                self._client = client
                self._up.set()
                first = self._first
                if first is not None and not first.done():
                    first.set_result(None)
                await self._lost.wait()
            finally:
                self._client = None
                self._up.clear()
                for helper in helpers:
                    helper.cancel()
                await asyncio.gather(*helpers, return_exceptions=True)

    def _client_for(self, stack: AsyncExitStack) -> Client:
        return Client(
            self._transport(stack),
            mode=self.server.protocol,
            elicitation_callback=self._elicit if self.elicitation is not None else None,
            message_handler=self._on_message,
            cache=None,  # a list change is followed by listing again, never from a cache
            client_info=types.Implementation(name="hitl-bridge", version="0.1.0"),
        )

    def _transport(self, stack: AsyncExitStack) -> Transport:
        """The server's transport, watched: its end (the process exited) is noticed at once."""
        if self.server.command is not None:
            command, *args = self.server.command
            if command in ("python", "python3"):
                command = sys.executable  # the interpreter running the bridge, with its packages
            cwd = self.folder / self.server.cwd if self.server.cwd else self.folder
            parameters = StdioServerParameters(
                command=command, args=[*args, *self.server.args], env=self.server.env or None,
                cwd=cwd,
            )  # fmt: skip
            errlog = stack.enter_context(StderrTail(self.label, self._stderr))
            return watched(stdio_client(parameters, errlog=errlog), self._lost)
        assert self.server.url is not None
        http = create_mcp_http_client(headers=dict(self.server.headers), timeout=HTTP_TIMEOUT)
        stack.push_async_callback(http.aclose)
        return watched(streamable_http_client(self.server.url, http_client=http), self._lost)

    async def _refresh(self, client: Client) -> None:
        tools: list[AITool] = []
        cursor: str | None = None
        for _ in range(100):
            page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                if not TOOL_NAME.match(tool.name):
                    log.warning("%s: tool %r skipped: the model's API does not take that name",
                                self.label, tool.name)  # fmt: skip
                    continue
                schema = dict(tool.input_schema) or {"type": "object", "properties": {}}
                tools.append(AITool(tool.name, tool.description or "", schema))
            cursor = page.next_cursor
            if cursor is None:
                break
        self._tools = tools

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._stale.set()
        elif isinstance(message, Exception):
            log.debug("%s: transport error: %s", self.label, message)

    async def _follow_changes(self, client: Client) -> None:
        while True:
            await self._stale.wait()
            self._stale.clear()
            try:
                await self._refresh(client)
            except Exception as err:
                log.warning("%s: listing its changed tools failed: %s", self.label, reason(err))
            else:
                log.info("%s: its tools are now %s", self.label,
                         ", ".join(t.name for t in self._tools))  # fmt: skip

    async def _listen(self, client: Client, listening: asyncio.Event) -> None:
        """2026-07-28: list changes come on a `subscriptions/listen` stream."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                listening.set()
                async for _ in subscription:
                    self._stale.set()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            log.info("%s: not following its list changes: %s", self.label, reason(err))
        finally:
            listening.set()

    def _said(self) -> str:
        """The server's last words on stderr, for a message about it."""
        last = next((line for line in reversed(self._stderr) if line.strip()), "")
        return f" (it said: {last.strip()[:300]})" if last else ""

    # -- calls -----------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        if not any(tool.name == name for tool in self._tools):
            raise UnservedToolCallError(name)
        client = await self._connection()
        call = _Call(name, current_tool_context(), self.server.call_timeout_seconds)
        self._calls.add(call)
        token = _in_call.set(call)
        try:
            async with asyncio.timeout(call.timeout) as call.deadline:
                result = await client.call_tool(name, arguments)
        except TimeoutError:
            raise ToolFailedError(
                f"{self.label} did not answer the call to '{name}' within "
                f"{call.timeout:g} s; it was cancelled, and may or may not have taken effect"
            ) from None
        except MCPError as err:
            if connection_lost(err):
                self._lost.set()
                raise ToolFailedError(
                    f"{self.label} stopped during the call to '{name}' ({err.message}); it is "
                    "being started again, and the call may or may not have taken effect"
                ) from None
            refused = f"{self.label} refused the call to '{name}': {err.message}"
            raise ToolFailedError(refused) from None
        except (httpx2.HTTPError, anyio.BrokenResourceError, anyio.ClosedResourceError) as err:
            self._lost.set()
            raise ToolFailedError(
                f"{self.label} could not be reached for '{name}': {reason(err)}"
            ) from None
        finally:
            _in_call.reset(token)
            self._calls.discard(call)
            for task in call.elicitations:
                task.cancel()
        text = text_of_result(result)
        if result.is_error:
            raise ToolFailedError(text or f"Tool '{name}' failed")
        return text

    async def _connection(self) -> Client:
        client = self._client
        if client is not None:
            return client
        if not self._closing:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.reconnect_wait):
                    await self._up.wait()
        client = self._client
        if client is None:
            raise ToolFailedError(f"{self.label} is not running (it is being started again)")
        return client

    # -- elicitation -----------------------------------------------------------------------

    async def _elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        assert self.elicitation is not None
        call = _in_call.get() or self._call_in_flight()
        if call is None:
            log.warning("%s asked for input outside any call it can be tied to: cancelled",
                        self.label)  # fmt: skip
            return types.ElicitResult(action="cancel")
        try:
            if isinstance(params, types.ElicitRequestURLParams):
                request = ElicitInputArgs(
                    message=params.message, mode="url", url=params.url,
                    server=self.server.label, tool=call.tool,
                )  # fmt: skip
            else:
                request = ElicitInputArgs(
                    message=params.message, mode="form",
                    requested_schema=dict(params.requested_schema), server=self.server.label,
                    tool=call.tool,
                )  # fmt: skip
        except ValidationError as err:
            log.warning("%s asked for input it cannot be shown: %s", self.label, err)
            return types.ElicitResult(action="cancel")
        task = asyncio.current_task()
        if task is not None:
            call.asking(task)
        try:
            outcome: ElicitOutcome = await self.elicitation.ask(call.context, request)
        finally:
            if task is not None:
                call.answered(task)
        return types.ElicitResult(action=outcome.action, content=outcome.content)

    def _call_in_flight(self) -> _Call | None:
        """The call a 2025 elicitation is for: the one in flight, or the latest of several
        from the same person in the same conversation."""
        calls = list(self._calls)
        if not calls:
            return None
        turns = {(c.context.room_id, c.context.actor_id) if c.context else None for c in calls}
        if len(turns) > 1:
            log.warning("%s asked for input with calls of several conversations in flight: "
                        "it cannot be told whose", self.label)  # fmt: skip
            return None
        return max(calls, key=lambda c: c.started)
