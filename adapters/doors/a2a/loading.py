"""The A2A routes, the `a2a-sdk` loaded once `serve` is ready rather than before (as the MCP
door's, adapters/doors/mcp/loading.py: the SDK, protobuf and Starlette take a while to import, and
Slack's clicks need none of them). The routes are mounted at once; a call that arrives before
the SDK is in waits for it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aiohttp import web

from adapters.serve.lazy_import import import_after_ready
from bot.doors.service import Doors, RequestBody
from bot.doors.tokens import Tokens
from bot.records import Asked
from bot.store.push_configs import PushConfig, PushConfigTables

if TYPE_CHECKING:
    from adapters.doors.a2a.server import A2aDoor

log = logging.getLogger(__name__)

PATH = "/a2a"
CARD_PATH = "/.well-known/agent-card.json"
SERVER_MODULE = "adapters.doors.a2a.server"


@dataclass(frozen=True, slots=True)
class PushPorts:
    """What push notifications need of the rest of `serve` (adapters/serve/door_service.py composes
    it):
    the configs' table, why a URL is refused (None: it is not; the webhooks' SSRF rules) and
    the webhook sender's queue (a config and the JSON to POST to it)."""

    tables: PushConfigTables
    check_url: Callable[[str], Awaitable[str | None]]
    enqueue: Callable[[PushConfig, str], Awaitable[None]]


class LoadingA2aDoor:
    """`mount`, then `start` (which returns at once, the loading under way). `settled` is the
    doors' hook that sends a settled task's push notifications."""

    def __init__(
        self, doors: Doors, tokens: Tokens, push: PushPorts, *, public_url: str | None = None,
        default_to: str | None = None,
    ) -> None:  # fmt: skip
        self._doors, self._tokens, self._public_url = doors, tokens, public_url
        self._default_to = default_to
        self.push = push
        self._loading: asyncio.Task[A2aDoor] | None = None

    def mount(self, app: web.Application) -> None:
        app.router.add_get(CARD_PATH, self.card)
        app.router.add_post(PATH, self.handle)
        for method in ("GET", "POST", "DELETE"):  # every method the HTTP+JSON binding has
            app.router.add_route(method, PATH + "/rest/{tail:.+}", self.handle)

    async def start(self) -> None:
        if self._loading is None:
            self._loading = asyncio.create_task(self._load(), name="hitl-a2a-load")

    async def loaded(self) -> A2aDoor:
        await self.start()
        assert self._loading is not None
        return await asyncio.shield(self._loading)

    async def card(self, request: web.Request) -> web.StreamResponse:
        door = await self._door()
        return await door.card(request) if door is not None else _unavailable()

    async def handle(self, request: web.Request) -> web.StreamResponse:
        door = await self._door()
        return await door.handle(request) if door is not None else _unavailable()

    async def settled(self, body: RequestBody, asked: Asked) -> None:
        """A door request settled: its push configs' notifications enqueued (none, the SDK not
        needed, for the many requests without one)."""
        configs = await self.push.tables.of_request(asked.request_id)
        door = await self._door() if configs else None  # failed to load: said once, by _load
        if door is not None:
            await door.pushes.notify(body, configs)

    async def _door(self) -> A2aDoor | None:
        try:
            return await self.loaded()
        except Exception as err:  # said once, by _load; each call after is told in a 503
            log.debug("A2A: not running: %s", err)
            return None

    async def _load(self) -> A2aDoor:
        try:
            server = await import_after_ready(SERVER_MODULE, "A2A")
            door: A2aDoor = server.A2aDoor(
                self._doors, self._tokens, self.push, public_url=self._public_url,
                default_to=self._default_to,
            )  # fmt: skip
        except Exception as err:
            log.error("A2A: the door did not start, /a2a answers 503: %s", err)
            raise
        return door


def _unavailable() -> web.Response:
    body = {"error": {"code": 503, "status": "UNAVAILABLE", "message": "A2A is not running"}}
    return web.json_response(body, status=503)
