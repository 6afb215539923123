"""`POST /ag-ui`, its SDK (`ag-ui-protocol`, pydantic models by the hundred) loaded once `serve`
is ready rather than before, as the MCP and A2A doors' (adapters/serve/lazy_import.py): Slack's
clicks
need none of it. The route is mounted at once; a run that arrives before the door is in waits for
it; a door that cannot start answers 503 in one line.

The door's surface (the threads) and its tool hooks are attached to the bridge when it loads:
before, no AG-UI run exists whose requests or tool calls they would tell."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from adapters.serve.lazy_import import import_after_ready
from bot import AIChannel
from bot.bridge.root import Bridge
from bot.doors.long_polls import LongPolls
from bot.doors.tokens import Tokens
from bot.human_tools.tool import HumanTool
from bot.requests.router import Router

if TYPE_CHECKING:
    from adapters.doors.ag_ui.door import AgUiDoor, OpenRequests

log = logging.getLogger(__name__)

PATH = "/ag-ui"
DOOR_MODULE = "adapters.doors.ag_ui.door"
RETRY_AFTER = "5"  # seconds: a door that failed to start does not come back by itself, soon


@dataclass(frozen=True, slots=True)
class AgUiParts:
    """What the door is opened on (adapters/doors/ag_ui/door.py's `open_ag_ui`)."""

    bridge: Bridge
    channel: AIChannel
    router: Router
    store: OpenRequests
    tokens: Tokens
    polls: LongPolls
    tools: Mapping[str, HumanTool]
    turns_per_token: int  # HITL_AG_UI_TURNS_PER_TOKEN


class LoadingAgUiDoor:
    """`mount`, then `start` (which returns at once, the loading under way)."""

    def __init__(self, parts: AgUiParts) -> None:
        self._parts = parts
        self._loading: asyncio.Task[AgUiDoor] | None = None

    def mount(self, app: web.Application) -> None:
        app.router.add_post(PATH, self.run)

    async def start(self) -> None:
        if self._loading is None:
            self._loading = asyncio.create_task(self._load(), name="hitl-ag-ui-load")

    async def loaded(self) -> AgUiDoor:
        await self.start()
        assert self._loading is not None
        return await asyncio.shield(self._loading)

    async def run(self, request: web.Request) -> web.StreamResponse:
        try:
            door = await self.loaded()
        except Exception as err:  # said once, by _load; each run after is told in a 503
            log.debug("AG-UI: not running: %s", err)
            body = {"error": "AG-UI is not running"}  # the door's own errors' shape
            return web.json_response(body, status=503, headers={"Retry-After": RETRY_AFTER})
        return await door.run(request)

    async def close(self) -> None:
        loading, self._loading = self._loading, None
        if loading is None:
            return
        if not loading.done():
            loading.cancel()
        with contextlib.suppress(BaseException):
            door = await loading
            await door.close()

    async def _load(self) -> AgUiDoor:
        p = self._parts
        try:
            module = await import_after_ready(DOOR_MODULE, "AG-UI")
            door: AgUiDoor = module.open_ag_ui(p.bridge, p.channel, p.router, p.store, p.tokens,
                                               p.polls, p.tools, p.turns_per_token)  # fmt: skip
        except Exception as err:
            log.error("AG-UI: the door did not start, %s answers 503: %s", PATH, err)
            raise
        return door
