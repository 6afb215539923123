"""One token's hanging receiver does not delay another token's callback: `hitl-bridge serve`
(Server.start) with the fake Slack, two tokens over the real API, a receiver on 127.0.0.1 that
accepts connections and never answers for one, a plain one for the other."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest
from aiohttp import web

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.doors.api.test_api import Api, start
from tests.adapters.surfaces.slack.conftest import WAIT, StartEnv

pytestmark = pytest.mark.slow  # a hanging receiver's timeout passes

SETTLED = 60  # token A's requests settled while its receiver hangs


@dataclass
class Hanging:
    """A receiver that accepts connections, reads, and never answers."""

    url: str = ""
    open: int = 0
    closed: int = 0
    accepted: asyncio.Event = field(default_factory=asyncio.Event)
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def connected(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.open += 1
        self.writers.append(writer)
        self.accepted.set()
        await reader.read()  # until the sender gives up on it
        self.open -= 1
        self.closed += 1


@pytest.fixture
async def hanging() -> AsyncIterator[Hanging]:
    made = Hanging()
    server = await asyncio.start_server(made.connected, "127.0.0.1", 0)
    host, port = server.sockets[0].getsockname()[:2]
    made.url = f"http://{host}:{port}/hook"
    yield made
    for writer in made.writers:
        writer.close()
    server.close()
    await server.wait_closed()


async def settle(api: Api, callback_url: str, token: str | None = None) -> str:
    """A request made with `callback_url`, then settled (cancelled by its requester)."""
    status, made = await api.call("POST", "/requests", {
        "tool": "requestApproval", "arguments": {"action": "Deploy", "reason": "Test"},
        "to": "slack:C0TEST0001", "callback_url": callback_url}, token=token)  # fmt: skip
    assert status == 201, made
    status, cancelled = await api.call("DELETE", f"/requests/{made['id']}", token=token)
    assert status == 200 and cancelled["status"] == "cancelled", cancelled
    return str(made["id"])


async def test_another_tokens_callback_arrives_while_one_tokens_receiver_hangs(
    start_env: StartEnv, hanging: Hanging
) -> None:
    arrived: asyncio.Queue[str] = asyncio.Queue()
    seen_hanging: list[tuple[int, int]] = []  # (open, closed) of the hanging receiver then

    async def hook(request: web.Request) -> web.Response:
        seen_hanging.append((hanging.open, hanging.closed))
        arrived.put_nowait((await request.json())["id"])
        return web.Response(status=204)

    app = web.Application()
    app.router.add_post("/hook", hook)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    await web.TCPSite(runner, "127.0.0.1", 0).start()
    host, port = runner.addresses[0][:2]
    try:
        # An attempt's timeout past the test's own: A's attempts hang until the end.
        env, api = await start(start_env, HITL_WEBHOOK_ALLOW_PRIVATE=1,
                               HITL_WEBHOOK_TIMEOUT_SECONDS=300)  # fmt: skip
        env.slack.channels.add("C0TEST0001")
        other, _ = await Tokens(DoorTables(env.store)).create("other-agent")
        for _ in range(SETTLED // 10):
            await asyncio.gather(*(settle(api, hanging.url) for _ in range(10)))
        await asyncio.wait_for(hanging.accepted.wait(), WAIT)  # A's deliveries are hanging
        request_id = await settle(api, f"http://{host}:{port}/hook", token=other)
        assert await asyncio.wait_for(arrived.get(), WAIT) == request_id
    finally:
        await runner.cleanup()
    ((still_open, closed),) = seen_hanging
    assert closed == 0 and still_open >= 1  # none of A's attempts had ended: all still hanging
    lines = [e.action for e in await env.store.list_audit(request_id=request_id)]
    assert "webhook.delivered" in lines
