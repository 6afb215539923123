"""/mcp, its SDK loaded once `serve` is ready rather than before.

The `mcp` SDK takes most of a second to import (its protocol types are hundreds of pydantic
models), and `serve` is ready for Slack's clicks and the HTTP API without it. So `serve` mounts
these routes at once and imports adapters/doors/mcp/server.py in a thread after it starts: the event
loop keeps answering meanwhile (the import only takes the GIL in turns), and a call to /mcp that
arrives before the SDK is in waits for it. Should the threaded import fail (two threads
importing one module round can deadlock), it is imported on the loop
(adapters/serve/lazy_import.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import TYPE_CHECKING

from aiohttp import web

from adapters.serve.lazy_import import import_after_ready
from bot.doors.service import Doors
from bot.doors.tokens import Tokens

if TYPE_CHECKING:
    from adapters.doors.mcp.server import McpDoor

log = logging.getLogger(__name__)

PATH = "/mcp"
SERVER_MODULE = "adapters.doors.mcp.server"


class LoadingMcpDoor:
    """The /mcp routes of `serve` before and after the SDK is in: `mount`, `start` (which
    returns at once, the loading under way), then `close` once."""

    def __init__(
        self, doors: Doors, tokens: Tokens, *, default_to: str | None = None,
        origins: frozenset[str] = frozenset(),
    ) -> None:  # fmt: skip
        self._doors = doors
        self._origins = origins
        self._tokens = tokens
        self._default_to = default_to
        self._loading: asyncio.Task[McpDoor] | None = None
        self._closed = False

    def mount(self, app: web.Application) -> None:
        for method in ("POST", "GET", "DELETE"):
            app.router.add_route(method, PATH, self.handle)

    async def start(self) -> None:
        if self._loading is None:
            self._loading = asyncio.create_task(self._load(), name="hitl-mcp-load")

    async def loaded(self) -> McpDoor:
        """The door, started; loaded now if `start` was not called."""
        await self.start()
        assert self._loading is not None
        return await asyncio.shield(self._loading)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self._closed:
            return _unavailable()
        try:
            door = await self.loaded()
        except Exception as err:  # said once, by _load; each call after is told in a 503
            log.debug("MCP: not running: %s", err)
            return _unavailable()
        return await door.handle(request)

    async def close(self) -> None:
        """Stop serving: the door, if it was loaded, ends the calls still waiting."""
        self._closed = True
        if self._loading is None:
            return
        with contextlib.suppress(Exception):
            door = await self._loading
            await door.close()

    async def _load(self) -> McpDoor:
        try:
            server = await import_after_ready(SERVER_MODULE, "MCP")
            door: McpDoor = server.McpDoor(
                self._doors, self._tokens, default_to=self._default_to, origins=self._origins
            )
            await door.start()
        except Exception as err:
            log.error("MCP: the door did not start, /mcp answers 503: %s", err)
            raise
        return door


def _unavailable() -> web.Response:
    return web.json_response(
        {"error": "unavailable", "message": "the MCP server is not running"}, status=503
    )
