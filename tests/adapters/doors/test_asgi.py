"""adapters/doors/asgi.py: an ASGI app served from an aiohttp route, on loopback: the scope it
sees, a body in chunks, a response streamed as it is sent, and a client that goes away."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import aiohttp
import pytest
from aiohttp import web

from adapters.doors import asgi
from adapters.doors.asgi import AsgiScope, Message, Receive, Send, serve_asgi

WAIT = 5.0


class App:
    """An ASGI app that echoes its body in a stream, its second part held until `release`."""

    def __init__(self) -> None:
        self.scope: AsgiScope = {}
        self.release = asyncio.Event()
        self.heard: list[Message] = []
        self.disconnected = asyncio.Event()

    async def __call__(self, scope: AsgiScope, receive: Receive, send: Send) -> None:
        self.scope = scope
        body = b""
        while True:
            message = await receive()
            body += message["body"]
            if not message["more_body"]:
                break
        headers = [(b"content-type", b"text/plain"), (b"x-seen", b"yes")]
        await send({"type": "http.response.start", "status": 201, "headers": headers})
        await send({"type": "http.response.body", "body": b"got " + body, "more_body": True})
        waiting = asyncio.create_task(self.release.wait())
        listening = asyncio.ensure_future(receive())
        done, _ = await asyncio.wait({waiting, listening}, return_when=asyncio.FIRST_COMPLETED)
        if listening in done:
            self.heard.append(listening.result())
            self.disconnected.set()
            waiting.cancel()
            await send({"type": "http.response.body", "body": b"lost", "more_body": False})
            return
        listening.cancel()
        await send({"type": "http.response.body", "body": b"; done", "more_body": False})


@pytest.fixture
async def served(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[tuple[str, App]]:
    monkeypatch.setattr(asgi, "GONE_POLL", 0.05)
    app = App()

    async def route(request: web.Request) -> web.StreamResponse:
        return await serve_asgi(app, request, {"who": "ci"})

    web_app = web.Application()
    web_app.router.add_post("/in", route)
    runner = web.AppRunner(web_app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    yield f"http://{host}:{port}/in?a=1", app
    await runner.cleanup()


async def chunks() -> AsyncIterator[bytes]:
    for part in (b"one ", b"two ", b"three"):
        yield part
        await asyncio.sleep(0.01)


async def test_the_body_arrives_and_the_response_streams(served: tuple[str, App]) -> None:
    url, app = served
    async with (
        asyncio.timeout(WAIT),
        aiohttp.ClientSession() as http,
        http.post(url, data=chunks(), headers={"X-Token": "t"}) as response,
    ):
        assert (response.status, response.headers["X-Seen"]) == (201, "yes")
        first = await response.content.readany()  # before the rest is released: streamed
        app.release.set()
        rest = await response.read()
    assert first + rest == b"got one two three; done"
    scope: dict[str, Any] = dict(app.scope)
    assert (scope["method"], scope["path"], scope["query_string"]) == ("POST", "/in", b"a=1")
    assert (b"x-token", b"t") in scope["headers"]  # names lower-cased, as ASGI has them
    assert scope["who"] == "ci" and scope["client"][0] == "127.0.0.1"


async def test_a_client_that_goes_away_is_heard_as_a_disconnect(served: tuple[str, App]) -> None:
    url, app = served
    async with asyncio.timeout(WAIT), aiohttp.ClientSession() as http:
        response = await http.post(url, data=b"x")
        assert await response.content.readany() == b"got x"
        response.close()  # the connection, mid-stream
        await app.disconnected.wait()
    assert app.heard == [{"type": "http.disconnect"}]
