"""A bridge serving the MCP door on loopback, for the tests: a real SqlStore on SQLite, a real
HumanInputHandler, Doors and tokens, the door as serve mounts it (LoadingMcpDoor) on the
project's aiohttp server, a person who answers through the Router from each request's view,
as a surface would, and the official `mcp` client on the door (`connected`)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import mcp_types as types
from aiohttp import web
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from adapters.doors.mcp.loading import LoadingMcpDoor
from adapters.serve.http_server import build_web_app
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.doors.service import DOOR_CHANNEL, Doors
from bot.doors.tokens import Tokens
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.human_tools.tool import BUILTIN_TOOLS
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Router, Settled
from bot.requests.view import RequestView, build_view
from bot.store import open_store
from bot.store.doors import DoorTables

PERSON = "U_ALICE"
WAIT = 10.0  # bound for what a test awaits; only a broken test reaches it

Act = Callable[["Person", RequestView], Coroutine[Any, Any, None]]


async def find(address: Address) -> Addressee:
    """The test's one reachable room: Slack channel C1, anyone there may answer."""
    if address.text != "slack:C1":
        raise UnknownAddressError(f"{address.text} cannot be reached in this test")
    return Addressee("slack:C1:", None)


class Person:
    """Someone at a surface: each door request posted is drawn as its view and, if `act` is
    set, answered by it through the router."""

    def __init__(self, handler: HumanInputHandler, router: Router) -> None:
        self.router = router
        self.act: Act | None = None
        self.views: list[RequestView] = []
        self._posted = asyncio.Condition()
        self._tasks: set[asyncio.Task[None]] = set()
        handler.add_observer(self.observe)

    async def observe(self, update: RequestUpdate) -> None:
        if update.channel_id != DOOR_CHANNEL or update.state is not RenderState.EXECUTING:
            return
        view = build_view(update, BUILTIN_TOOLS.get(update.tool_name))
        async with self._posted:
            self.views.append(view)
            self._posted.notify_all()
        if self.act is not None:
            task = asyncio.create_task(self.act(self, view))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def posted(self, count: int = 1) -> RequestView:
        """The `count`-th request posted, once it is."""
        async with asyncio.timeout(WAIT), self._posted:
            await self._posted.wait_for(lambda: len(self.views) >= count)
            return self.views[count - 1]

    async def press(self, request_id: str, verb: Verb, inputs: dict[str, Any]) -> None:
        interaction = Interaction(request_id, PERSON, verb, inputs, surface="test")
        outcome = await self.router.handle(interaction)
        assert isinstance(outcome, Settled), outcome

    async def settle(self) -> None:
        await asyncio.gather(*self._tasks)


def pressing(verb: Verb, inputs: dict[str, Any] | None = None) -> Act:
    """An act: press `verb` with `inputs` on whatever is posted."""

    async def act(person: Person, view: RequestView) -> None:
        await person.press(view.request_id, verb, inputs or {})

    return act


@dataclass
class Served:
    """The running bridge: its URL (no path), a live token and its name, and its parts."""

    url: str
    token: str
    name: str
    tokens: Tokens
    doors: Doors
    door: LoadingMcpDoor
    person: Person

    @property
    def endpoint(self) -> str:
        return f"{self.url}/mcp"


@asynccontextmanager
async def served(
    tmp_path: Path,
    *,
    default_to: str | None = "slack:C1",
    port: int = 0,
    name: str = "ci-agent",
    origins: frozenset[str] = frozenset(),
) -> AsyncIterator[Served]:
    """The bridge on `port` (any free one by default) with its database in `tmp_path` (a
    second bridge there shares it), and a new token called `name`; `origins` are the browser
    origins its door allows."""
    store = await open_store(f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}")
    handler = HumanInputHandler(store=store)
    tables = DoorTables(store)
    tokens = Tokens(tables)
    doors = Doors(handler, tables, BUILTIN_TOOLS, find)
    router = Router(store=store, handler_for=lambda _: handler, handlers=(handler,),
                    tools=BUILTIN_TOOLS)  # fmt: skip
    door = LoadingMcpDoor(doors, tokens, default_to=default_to, origins=origins)

    async def healthy() -> bool:
        return True

    runner = web.AppRunner(build_web_app(health=healthy, mounts=[door.mount]))
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    await door.start()
    host, port = runner.addresses[0][:2]
    token, _ = await tokens.create(name)
    try:
        yield Served(f"http://{host}:{port}", token, name, tokens, doors, door,
                     Person(handler, router))  # fmt: skip
    finally:
        await door.close()
        await runner.cleanup()
        await doors.close()
        await asyncio.wait_for(handler.drain(), WAIT)
        await store.close()


@asynccontextmanager
async def connected(
    bridge: Served,
    mode: str = "auto",
    token: str | None = None,
    headers: dict[str, str] | None = None,
) -> AsyncIterator[Client]:
    """The official client on the door, with `token` (the bridge's own by default) and any
    other `headers`."""
    sent = {"Authorization": f"Bearer {token or bridge.token}", **(headers or {})}
    http = create_mcp_http_client(headers=sent)
    transport = streamable_http_client(bridge.endpoint, http_client=http)
    async with http, Client(transport, mode=mode, cache=None) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    """A result's one text block."""
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


# The input of a call of Claude Code's Bash tool, as its permission prompt carries it.
BASH = {"command": "rm -rf build", "description": "Clean the build", "timeout": 30}


def editing(inputs: dict[str, Any]) -> Act:
    """An act: edit a permission request of BASH's arguments with `inputs`."""

    async def act(person: Person, view: RequestView) -> None:
        (edit,) = [c for c in view.controls if c.verb is Verb.EDIT]
        assert edit.form is not None
        assert [f.name for f in edit.form.fields] == list(BASH)  # every argument is editable
        await person.press(view.request_id, Verb.EDIT, inputs)

    return act
