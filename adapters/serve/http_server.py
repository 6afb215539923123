"""The one HTTP server of `hitl-bridge serve`: Slack, Teams, the doors and health on one port.

Every route gets the same guard (adapters/serve/http_limits.py): a body deadline, and a last resort
that answers what a handler did not expect with a 400 or 503 and one log line, never a 500.
Each surface's handler authenticates before it interprets a body and limits what it reads.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from aiohttp import web

from adapters.serve.http_limits import guard, quiet_protocol_errors

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
HealthCheck = Callable[[], Awaitable[bool]]

SLACK_PATH = "/slack/events"
TEAMS_PATH = "/api/messages"
HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"

# For anything reading the body through aiohttp (request.read(), .post(), .json()): 413 above.
# The surfaces read theirs with their own, lower limits (Slack 1 MB, Teams 256 KB).
CLIENT_MAX_SIZE = 1024 * 1024


def build_web_app(
    *,
    health: HealthCheck,
    slack: Handler | None = None,
    teams: Handler | None = None,
    ready: Handler | None = None,
    mounts: Sequence[Callable[[web.Application], None]] = (),
    middlewares: Sequence[Any] = (),
) -> web.Application:
    """Routes for the surfaces that are configured, a health check (alive) and, given
    `ready`, a readiness check (able to take work: adapters/serve/readiness.py); each of `mounts`
    adds its own (the doors: adapters/serve/door_service.py). `middlewares` go outside the guard (a
    request's span sees what the guard answers: adapters/ops/tracing.py)."""
    quiet_protocol_errors()
    app = web.Application(client_max_size=CLIENT_MAX_SIZE, middlewares=[*middlewares, guard()])

    async def healthz(_: web.Request) -> web.Response:
        ready = await health()
        return web.json_response({"ok": ready}, status=200 if ready else 503)

    app.router.add_get(HEALTH_PATH, healthz)
    if ready is not None:
        app.router.add_get(READY_PATH, ready)
    if slack is not None:
        app.router.add_post(SLACK_PATH, slack)
    if teams is not None:
        app.router.add_post(TEAMS_PATH, teams)
    for mount in mounts:
        mount(app)
    return app
