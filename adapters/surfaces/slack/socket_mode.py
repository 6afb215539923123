"""Socket Mode (SLACK_APP_TOKEN): Slack connects out, no public URL needed.

Each connection starts with `apps.connections.open`, called with the app-level token, which
hands out the WebSocket's URL. slack_sdk's client retries a failed call forever, logging a
traceback each time, also when Slack refuses the token (a bot token given as the app token, an
app token without `connections:write`, a revoked one), which no retry can fix. So the call is
ours (`open_connection`): a refusal is a `StartupError` naming SLACK_APP_TOKEN and the fix, at
start and at any reconnection (then `serve` stops with it); a transient failure (the network,
a 5xx, `ratelimited`) is retried with backoff, one line each.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

import aiohttp
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.app.async_app import AsyncApp
from slack_sdk.errors import SlackApiError
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.web.async_client import AsyncWebClient

from adapters.serve.startup import CONFIGURATION, StartupError
from adapters.surfaces.slack.calls import slack_error

log = logging.getLogger(__name__)

VARIABLE = "SLACK_APP_TOKEN"
# What Slack answers `apps.connections.open` for a token it will never accept there.
REFUSALS = frozenset({
    "invalid_auth", "not_authed", "not_allowed_token_type", "missing_scope", "token_revoked",
    "token_expired", "account_inactive",
})  # fmt: skip
START_ATTEMPTS = 5  # at start, then serve fails (status 1): Slack is down, or out of reach
FIRST_BACKOFF = 1.0  # seconds, doubled after each failure up to MAX_BACKOFF
MAX_BACKOFF = 60.0

OnRefused = Callable[[StartupError], None]


def refusal(code: str) -> StartupError:
    """The one line for a token Slack refuses: which variable, why, and what to set it to."""
    if code == "not_allowed_token_type":
        why = "it is not an app-level token (a bot token xoxb-…?)"
    elif code == "missing_scope":
        why = "the token lacks the connections:write scope"
    else:
        why = "the token is not valid (revoked, or of another app)"
    return StartupError(
        f"Slack refused {VARIABLE} ({code}): {why}; set it to an app-level token (xapp-…) "
        "with connections:write, made under Basic Information > App-Level Tokens, or unset "
        "it to receive Slack's events over HTTP",
        status=CONFIGURATION,
    )


async def open_connection(
    client: AsyncWebClient, token: str, attempts: int | None = START_ATTEMPTS
) -> str:
    """The URL of a new Socket Mode connection (`apps.connections.open`). A refused token is a
    `refusal`; a transient failure is retried with backoff, `attempts` times at most (None:
    until it works), then a StartupError saying what Slack answered."""
    backoff = FIRST_BACKOFF
    attempt = 0
    while True:
        attempt += 1
        try:
            response = await client.apps_connections_open(app_token=token)
            return str(response["url"])
        except SlackApiError as err:
            code = slack_error(err)
            if code in REFUSALS:
                raise refusal(code) from None
            said = f"answered {code}"
            wait = _retry_after(err) or backoff
        except (TimeoutError, aiohttp.ClientError, OSError) as err:
            said = f"could not be reached ({err or type(err).__name__})"
            wait = backoff
        if attempts is not None and attempt >= attempts:
            where = client.base_url
            raise StartupError(f"cannot open a Socket Mode connection: Slack at {where} {said}")
        log.warning("Socket Mode: Slack %s; trying again in %gs", said, wait)
        await asyncio.sleep(wait)
        backoff = min(backoff * 2, MAX_BACKOFF)


def _retry_after(err: SlackApiError) -> float | None:
    headers = getattr(err.response, "headers", None) or {}
    value = headers.get("Retry-After") or headers.get("retry-after")
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class _Client(SocketModeClient):
    """slack_sdk's aiohttp client, whose new connections are opened by `open_connection`: a
    refusal seen on a reconnection is handed to `refused` (serve stops with it) and this client
    stops, instead of retrying (and logging a traceback) forever."""

    def __init__(self, app: AsyncApp, token: str, refused: OnRefused) -> None:
        super().__init__(app_token=token, logger=app.logger, web_client=app.client,
                         ping_interval=10)  # fmt: skip  # Bolt's handler's default
        self._refused = refused

    async def issue_new_wss_url(self) -> str:
        try:
            return await open_connection(self.web_client, self.app_token, attempts=None)
        except StartupError as err:
            self.closed = True  # the client's loops end; serve closes it
            self.auto_reconnect_enabled = False
            self._refused(err)
            # The caller (the client's monitor or receiver task) would log what is raised
            # here, and try again: it waits instead, until serve's close() cancels it.
            await asyncio.Event().wait()
            raise  # not reached


class SocketMode(AsyncSocketModeHandler):
    """Bolt's Socket Mode handler over `_Client`. Its first connection is opened by `start`,
    once, before anything is handed to the client: a refused token stops the start."""

    def __init__(self, app: AsyncApp, token: str, refused: OnRefused) -> None:
        # Not super().__init__: it would start a client of its own (a session, a task).
        self.app = app
        self.app_token = token
        self.client = _Client(app, token, refused)
        self.client.socket_mode_request_listeners.append(self.handle)  # type: ignore[arg-type]

    @classmethod
    async def start(cls, app: AsyncApp, token: str, refused: OnRefused) -> SocketMode:
        """Connected to Slack; a StartupError (the token refused, Slack out of reach) else."""
        url = await open_connection(app.client, token)
        handler = cls(app, token, refused)
        handler.client.wss_uri = url  # the client connects there rather than ask again
        try:
            await handler.connect_async()  # type: ignore[no-untyped-call]  # untyped in Bolt
        except BaseException:
            await handler.close_async()  # type: ignore[no-untyped-call]
            raise
        return handler
