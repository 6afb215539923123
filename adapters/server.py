"""The one HTTP server of `hitl-bridge serve`: Slack, (later) Teams and health on one port."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import web

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HealthCheck = Callable[[], Awaitable[bool]]

SLACK_PATH = "/slack/events"
TEAMS_PATH = "/api/messages"
HEALTH_PATH = "/healthz"


def build_web_app(
    *, health: HealthCheck, slack: Handler | None = None, teams: Handler | None = None
) -> web.Application:
    """Routes for the surfaces that are configured, and a health check."""
    app = web.Application(client_max_size=4 * 1024 * 1024)

    async def healthz(_: web.Request) -> web.Response:
        ready = await health()
        return web.json_response({"ok": ready}, status=200 if ready else 503)

    app.router.add_get(HEALTH_PATH, healthz)
    if slack is not None:
        app.router.add_post(SLACK_PATH, slack)
    if teams is not None:
        app.router.add_post(TEAMS_PATH, teams)
    return app
