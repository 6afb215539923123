"""The doors of `serve` (docs/api-and-mcp.md), composed: the HTTP API under /api/v1 and its
webhooks, the MCP server at /mcp and A2A at /a2a, over one `Doors` (bot/doors/service.py) on
the bridge's handler, store and surfaces."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import aiohttp
from aiohttp import web

from adapters.doors.a2a.loading import LoadingA2aDoor, PushPorts
from adapters.doors.api.callback_urls import check_url
from adapters.doors.api.routes import ApiDoor
from adapters.doors.api.webhooks import Webhooks
from adapters.doors.mcp.loading import LoadingMcpDoor
from adapters.doors.mcp.origins import allowed_origins
from adapters.serve.settings import Settings
from bot import Bridge, HumanInputHandler, HumanTool
from bot.doors.service import Doors
from bot.doors.tokens import Tokens
from bot.store import SqlStore
from bot.store.doors import DoorTables
from bot.store.push_configs import PushConfigTables
from bot.store.webhooks import WebhookTables


@dataclass
class DoorService:
    """What the doors add to a service: routes to mount, a webhook sender to run."""

    doors: Doors
    tokens: Tokens
    api: ApiDoor
    webhooks: Webhooks
    mcp: LoadingMcpDoor  # its SDK loaded after serve is ready (adapters/doors/mcp/loading.py)
    a2a: LoadingA2aDoor  # the same (adapters/doors/a2a/loading.py)

    def mount(self, app: web.Application) -> None:
        self.api.mount(app)
        self.mcp.mount(app)
        self.a2a.mount(app)

    async def start(self) -> None:
        await self.mcp.start()
        await self.a2a.start()
        await self.webhooks.start()

    async def stop_waiting(self) -> None:
        """End the MCP calls waiting on a person (before the HTTP server stops: they would
        hold its shutdown timeout); once only."""
        await self.mcp.close()

    async def close(self) -> None:
        await self.doors.close()
        await self.webhooks.close()


def open_doors(
    settings: Settings,
    store: SqlStore,
    bridge: Bridge,
    handler: HumanInputHandler,
    tools: Mapping[str, HumanTool],
    trace_configs: Sequence[aiohttp.TraceConfig] = (),
    webhooks_counted: Callable[[str], None] | None = None,
) -> DoorService:
    """The doors on `handler` (the agent's, so the router that answers its requests answers
    theirs), posting through the bridge's surfaces."""
    tables = DoorTables(store)
    tokens = Tokens(tables)
    doors = Doors(handler, tables, tools, bridge.find,
                  default_timeout=settings.door_timeout_seconds,
                  polls_per_token=settings.long_polls_per_token,
                  polls_per_worker=settings.long_polls_per_worker)  # fmt: skip
    bridge.on_settled_elsewhere(doors.wake_polls)
    allow_private = settings.webhook_allow_private

    async def secret_for(requester: str) -> str | None:
        token = await tables.token_named(requester)
        return token.webhook_secret if token is not None and token.revoked_at is None else None

    async def check_callback(url: str) -> str | None:
        return await check_url(url, allow_private)

    webhooks = Webhooks(WebhookTables(store), secret_for, allow_private=allow_private,
                        timeout=settings.webhook_timeout_seconds,
                        trace_configs=trace_configs,
                        counted=webhooks_counted)  # fmt: skip
    doors.on_settled(webhooks.enqueue)
    api = ApiDoor(doors, tokens, check_callback=check_callback)
    origins = allowed_origins(settings.allowed_origins, settings.public_url)
    mcp = LoadingMcpDoor(doors, tokens, default_to=settings.mcp_default_to, origins=origins)
    push = PushPorts(PushConfigTables(store), check_callback, webhooks.enqueue_push)
    a2a = LoadingA2aDoor(doors, tokens, push, public_url=settings.public_url,
                         default_to=settings.a2a_default_to)  # fmt: skip
    doors.on_settled(a2a.settled)  # A2A's push notifications, through the same webhooks
    return DoorService(doors, tokens, api, webhooks, mcp, a2a)
