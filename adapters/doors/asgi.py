"""One aiohttp request served by an ASGI application (the `mcp` and `a2a` SDKs' HTTP handlers),
on our own server: no second server, no second port.

The scope is built from the request as an ASGI server would (headers lower-cased, the raw
path, the peer), with `extra` entries of the caller's (who the bearer token says is asking).
`receive` gives the body as it arrives, then waits for the client to go away: an SSE response
listens for that to stop streaming. `send` writes the response as it comes (an SSE stream is
written event by event, not buffered).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, MutableMapping
from typing import Any

from aiohttp import web

AsgiScope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[AsgiScope, Receive, Send], Awaitable[None]]

GONE_POLL = 1.0  # seconds between looks at whether the client closed its connection


async def serve_asgi(
    app: AsgiApp, request: web.Request, extra: Mapping[str, Any] = {}, body: bytes | None = None
) -> web.StreamResponse:
    """`request` answered by `app`; the response as `app` sent it. `body`: the request's body
    when the caller has read it already (to hold it to a limit of its own)."""
    exchange = _Exchange(request, body)
    await app(_scope(request, extra), exchange.receive, exchange.send)
    return await exchange.finished()


def _scope(request: web.Request, extra: Mapping[str, Any]) -> AsgiScope:
    path, _, _ = request.raw_path.partition("?")
    transport = request.transport
    server = transport.get_extra_info("sockname") if transport is not None else None
    return {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.4"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "raw_path": path.encode("latin-1", "replace"),
        "query_string": request.query_string.encode("latin-1", "replace"),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "server": tuple(server[:2]) if isinstance(server, tuple) else None,
        "client": (request.remote, 0) if request.remote else None,
        **extra,
    }


class _Exchange:
    """The receive and send of one request (see the module's docstring)."""

    def __init__(self, request: web.Request, body: bytes | None = None) -> None:
        self.request = request
        self.response: web.StreamResponse | None = None
        self._body_done = False
        self._body = body

    async def receive(self) -> Message:
        if self._body is not None and not self._body_done:
            self._body_done = True
            return {"type": "http.request", "body": self._body, "more_body": False}
        if not self._body_done:
            chunk = await self.request.content.readany()  # b"" only at its end
            more = bool(chunk) and not self.request.content.is_eof()
            self._body_done = not more
            return {"type": "http.request", "body": chunk, "more_body": more}
        while not self._gone():  # noqa: ASYNC110  (aiohttp says so only by the transport's state)
            await asyncio.sleep(GONE_POLL)
        return {"type": "http.disconnect"}

    def _gone(self) -> bool:
        # aiohttp tells a handler nothing when its client leaves (unless handlers are
        # cancelled, which this server does not ask for): the transport is looked at instead.
        transport = self.request.transport
        return transport is None or transport.is_closing()

    async def send(self, message: Message) -> None:
        """Headers go at once (an SSE stream's, before its first event); what is sent after the
        client left is dropped, as ASGI servers do: the app hears of it from `receive`."""
        if self._gone():
            return
        try:
            if message["type"] == "http.response.start":
                self.response = web.StreamResponse(status=message["status"])
                for name, value in message.get("headers", ()):
                    self.response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
                await self.response.prepare(self.request)
            elif message["type"] == "http.response.body":
                if self.response is None:
                    raise RuntimeError("an ASGI body was sent before its response started")
                body = message.get("body", b"")
                if body:
                    await self.response.write(body)
                if not message.get("more_body", False):
                    await self.response.write_eof()
        except ConnectionResetError:  # gone while writing
            return

    async def finished(self) -> web.StreamResponse:
        """The response, its end written; an app that never started one is a bug of the app's
        (answered by the server's guard)."""
        if self.response is None:
            if self._gone():
                return web.Response(status=400)  # nobody reads it
            raise RuntimeError("the ASGI application sent no response")
        if not self._gone():
            await self.response.write_eof()
        return self.response
