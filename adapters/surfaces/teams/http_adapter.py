"""The Teams SDK on our aiohttp server, and the SDK's quirks, kept in this one module.

The SDK's `App` owns an `HttpServer` that talks to any web framework through the
`HttpServerAdapter` protocol (`microsoft_teams.apps.http.adapter`): `App.initialize()` calls
`register_route("POST", "/api/messages", handler)`. `AiohttpAdapter` takes that registration
as the sign that the App is ready and serves the route from `handle`, the aiohttp handler
`build_web_app(teams=...)` mounts at the same path: Slack, Teams and /healthz share one server
and one port. The server's lifecycle is ours (`Server.start` / `stop`), so the protocol's
`start` refuses and `stop` has nothing to do.

`handle` does what the SDK's handler (`HttpServer.handle_request`) does, in a safer order,
and never calls it: the SDK's handler is given the body already parsed (JSON before any
credentials: a 10,000-deep body was a 500 RecursionError for anyone) and validates the token
with PyJWKClient, which fetches Microsoft's signing keys with blocking urllib on the event
loop, for any token (`alg=none` included): a burst of forged tokens stalled every request on
the port. Here, in order:

1. the `Authorization` header, verified by `ActivityVerifier` (tokens.py: keys fetched
   asynchronously and cached, fetches bounded) unless Teams runs unauthenticated
   (HITL_TEAMS_ALLOW_UNAUTHENTICATED, development only); a refusal is 401 before the body is
   read, with a WARNING line (at most one per `LOG_EVERY` seconds) that names the reason and
   the peer, never the token;
2. the body, read only then, at most `MAX_BODY_BYTES` (413 beyond, without reading the rest),
   parsed as a JSON object at most `MAX_DEPTH` deep: anything else is 400 with one line (a
   RecursionError included; deeper bodies would fail pydantic's serializer later, a 500);
3. the token's `serviceurl` claim against the activity's `serviceUrl` (401 if they differ);
4. the activity (top-level nulls dropped, as the SDK's `model_dump(exclude_none=True)` did)
   to the handler given to `serve`, its `InvokeResponse` back as the HTTP response.

Quirks of microsoft-teams-apps 2.1.1 isolated here (each silenced narrowly, only around the
synchronous code that raises it, so nothing else is hidden):
- importing `microsoft_teams.apps` emits an ExperimentalWarning: `apps/utils/html_widget.py`
  builds a preview `HtmlWidgetSecurityPolicy` at import time;
- every `ApiClient` (one per `App`, one per activity in the SDK's pipeline, one per clone)
  instantiates the deprecated `BotClient`: a DeprecationWarning each time.
"""

from __future__ import annotations

import json
import logging
import warnings
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Unpack

from aiohttp import web
from microsoft_teams.api import ApiClient, InvokeResponse
from microsoft_teams.common.experimental import ExperimentalWarning
from pydantic_core import to_jsonable_python

with warnings.catch_warnings():
    # The preview class built at import time (see the module docstring); nothing else.
    warnings.filterwarnings(
        "ignore", message="HtmlWidgetSecurityPolicy", category=ExperimentalWarning
    )
    from microsoft_teams.apps import App, AppOptions
    from microsoft_teams.apps.http.adapter import HttpMethod, HttpRouteHandler

from adapters.serve.http_limits import LOG_EVERY, BodyTooLarge, Throttled, read_body, too_deep
from adapters.surfaces.teams.tokens import ActivityVerifier, TokenRefused

__all__ = [
    "ActivityHandler",
    "AiohttpAdapter",
    "App",
    "close_app",
    "connector_client",
    "new_app",
]

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 256 * 1024  # an activity is a few KB; Teams caps messages at ~28 KB
MAX_DEPTH = 64  # an activity nests ~10 deep; pydantic's serializer fails past ~250


JSON = dict[str, Any]
ActivityHandler = Callable[[JSON], Awaitable[InvokeResponse[Any]]]


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
        self._on_activity: ActivityHandler | None = None
        self._verifier: ActivityVerifier | None = None
        self._refusals = Throttled(log, LOG_EVERY)
        self._bad_bodies = Throttled(log, LOG_EVERY)

    # -- the HttpServerAdapter protocol ------------------------------------------------------

    def register_route(self, method: HttpMethod, path: str, handler: HttpRouteHandler) -> None:
        """Called by `App.initialize()`: the path is served from now on (by `handle`, not by
        the SDK's `handler`, see the module docstring)."""
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

    def serve(self, on_activity: ActivityHandler, verifier: ActivityVerifier | None) -> None:
        """Give the activities `verifier` accepts to `on_activity`; without a verifier, every
        activity (HITL_TEAMS_ALLOW_UNAUTHENTICATED: development only)."""
        self._on_activity, self._verifier = on_activity, verifier

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """Serve a registered route: authenticate, then read and parse, then the handler."""
        on_activity = self._on_activity
        if request.path not in self._routes or on_activity is None:  # not started (yet)
            return web.json_response({"error": "Teams is not ready"}, status=503)
        claims: JSON | None = None
        if self._verifier is not None:
            try:
                claims = await self._verifier.verify(request.headers.get("Authorization"))
            except TokenRefused as refusal:
                return self._refuse(request, str(refusal))
        try:
            activity = parse_activity(await read_body(request, MAX_BODY_BYTES))
        except BodyTooLarge:
            self._bad_bodies.warning("Teams: refused an activity from %s (413): the body is "
                                     "over %d bytes", request.remote, MAX_BODY_BYTES)  # fmt: skip
            return web.json_response({"error": "the body is too large"}, status=413)
        except BadBody as bad:
            self._bad_bodies.warning("Teams: refused an activity from %s (400): %s",
                                     request.remote, bad)  # fmt: skip
            return web.json_response({"error": str(bad)}, status=400)
        if claims is not None:
            try:
                ActivityVerifier.check_service_url(claims, activity.get("serviceUrl"))
            except TokenRefused as refusal:
                return self._refuse(request, str(refusal))
        return _to_aiohttp(await on_activity(activity))

    def _refuse(self, request: web.Request, reason: str) -> web.Response:
        self._refusals.warning("Teams: refused an activity from %s (401): %s",
                               request.remote, reason)  # fmt: skip
        return web.json_response({"error": "Unauthorized"}, status=401)


class BadBody(Exception):
    """A body that is not an activity; the message says why, in a few words."""


def parse_activity(body: bytes) -> JSON:
    """A JSON object at most MAX_DEPTH deep, top-level nulls dropped; BadBody otherwise."""
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):  # UnicodeDecodeError is a ValueError
        raise BadBody("the body is not JSON") from None
    if not isinstance(value, dict):
        raise BadBody("the body is not a JSON object")
    if too_deep(value, MAX_DEPTH):
        raise BadBody(f"the body nests deeper than {MAX_DEPTH} levels")
    return {name: item for name, item in value.items() if item is not None}


def _to_aiohttp(response: InvokeResponse[Any]) -> web.Response:
    if response.body is None:
        return web.Response(status=response.status)
    return web.json_response(response.body, status=response.status, dumps=_dumps)


def _dumps(value: Any) -> str:
    """JSON for what the SDK returns: plain data, or pydantic models inside it."""
    return json.dumps(value, default=to_jsonable_python)
