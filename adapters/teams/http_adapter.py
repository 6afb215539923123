"""The Teams SDK on our aiohttp server, and the SDK's quirks, kept in this one module.

The SDK's `App` owns an `HttpServer` (JWT validation of incoming activities, the messaging
endpoint) that talks to any web framework through the `HttpServerAdapter` protocol
(`microsoft_teams.apps.http.adapter`): `App.initialize()` calls
`register_route("POST", "/api/messages", handler)`, and the handler takes and returns plain
`HttpRequest`/`HttpResponse` dicts. `AiohttpAdapter` keeps that route and serves it from
`handle`, the aiohttp handler `build_web_app(teams=...)` mounts at the same path: Slack, Teams
and /healthz share one server and one port. The server's lifecycle is ours (`Server.start` /
`stop`), so the protocol's `start` refuses and `stop` has nothing to do.

Quirks of microsoft-teams-apps 2.1.1 isolated here (each silenced narrowly, only around the
synchronous code that raises it, so nothing else is hidden):
- importing `microsoft_teams.apps` emits an ExperimentalWarning: `apps/utils/html_widget.py`
  builds a preview `HtmlWidgetSecurityPolicy` at import time;
- every `ApiClient` (one per `App`, one per activity in the SDK's pipeline, one per clone)
  instantiates the deprecated `BotClient`: a DeprecationWarning each time.
Not worked around: the SDK validates tokens with PyJWKClient, which fetches Microsoft's signing
keys with blocking urllib inside the async handler, so the first authenticated activity (and
one whenever its 5-minute key cache lapses) holds the event loop for that fetch.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Unpack

from aiohttp import web
from microsoft_teams.api import ApiClient
from microsoft_teams.common.experimental import ExperimentalWarning
from pydantic_core import to_jsonable_python

with warnings.catch_warnings():
    # The preview class built at import time (see the module docstring); nothing else.
    warnings.filterwarnings(
        "ignore", message="HtmlWidgetSecurityPolicy", category=ExperimentalWarning
    )
    from microsoft_teams.apps import App, AppOptions
    from microsoft_teams.apps.events import ActivityEvent
    from microsoft_teams.apps.http.adapter import (
        HttpMethod,
        HttpRequest,
        HttpResponse,
        HttpRouteHandler,
    )

__all__ = [
    "ActivityEvent",
    "AiohttpAdapter",
    "App",
    "close_app",
    "connector_client",
    "new_app",
]

log = logging.getLogger(__name__)


@contextmanager
def _no_bot_client_deprecation() -> Iterator[None]:
    """Silence the SDK's own use of its deprecated BotClient inside ApiClient()."""
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="The bot client is deprecated", category=DeprecationWarning
        )
        yield


def new_app(**options: Unpack[AppOptions]) -> App:
    """`App(**options)`, without the warning its ApiClient raises."""
    with _no_bot_client_deprecation():
        return App(**options)


def connector_client(app: App, service_url: str) -> ApiClient:
    """A Bot Connector client for one `serviceUrl`, authenticated as `app` (no token at all
    when the app has no credentials), sharing the app's HTTP connection pool."""
    with _no_bot_client_deprecation():
        return ApiClient(
            service_url, app.http_client, cloud=app.cloud, token_provider=app.token_provider
        )


async def close_app(app: App) -> None:
    """Close the HTTP clients `App()` opened (its own and the one of `app.api`)."""
    await app.api.http.http.aclose()
    await app.http_client.http.aclose()


class AiohttpAdapter:
    """The SDK's `HttpServerAdapter` for routes served by our aiohttp application."""

    def __init__(self) -> None:
        self._routes: dict[str, HttpRouteHandler] = {}

    # -- the HttpServerAdapter protocol ------------------------------------------------------

    def register_route(self, method: HttpMethod, path: str, handler: HttpRouteHandler) -> None:
        if method != "POST":
            raise ValueError(f"unsupported HTTP method for a Teams route: {method}")
        self._routes[path] = handler

    # These two are refused on purpose, not left to do: the SDK must not open a port of its
    # own or serve files, since one aiohttp server (Server.start) serves every surface.
    def serve_static(self, path: str, directory: str) -> None:
        raise RuntimeError("hitl-bridge serves no static pages for Teams")

    async def start(self, port: int) -> None:
        raise RuntimeError("hitl-bridge's own server owns the port (Server.start)")

    async def stop(self) -> None:
        """Nothing to stop: the aiohttp server is stopped by `Server.stop`."""

    # -- aiohttp ------------------------------------------------------------------------------

    @property
    def paths(self) -> frozenset[str]:
        """The paths the SDK registered (the messaging endpoint once the App is initialized)."""
        return frozenset(self._routes)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Serve a registered route: JSON in, the SDK's status and JSON body out."""
        handler = self._routes.get(request.path)
        if handler is None:  # the App is not initialized yet (or was never configured)
            return web.json_response({"error": "Teams is not ready"}, status=503)
        try:
            body: Any = await request.json()
        except ValueError:
            return web.json_response({"error": "the body is not JSON"}, status=400)
        if not isinstance(body, dict):
            return web.json_response({"error": "the body is not a JSON object"}, status=400)
        headers = {name.lower(): value for name, value in request.headers.items()}
        response = await handler(HttpRequest(body=body, headers=headers))
        return _to_aiohttp(response)


def _to_aiohttp(response: HttpResponse) -> web.Response:
    status, body = response["status"], response.get("body")
    if body is None:
        return web.Response(status=status)
    return web.json_response(body, status=status, dumps=_dumps)


def _dumps(value: Any) -> str:
    """JSON for what the SDK returns: plain data, or pydantic models inside it."""
    return json.dumps(value, default=to_jsonable_python)
