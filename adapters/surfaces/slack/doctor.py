"""`hitl-bridge doctor`'s Slack checks: the bot token (`auth.test`) and its scopes against
the manifest's, the signing secret, the Socket Mode token (`apps.connections.open`).

Slack lists the scopes a token was granted in the `x-oauth-scopes` header of every answer;
`BOT_SCOPES` are manifest.yml's bot scopes (tests/adapters/surfaces/slack/test_doctor.py holds them
equal), kept here because an installed bridge has no manifest beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.ops.doctor.results import Result, failed, passed, shown_secret, skipped
from adapters.serve.settings import Settings
from adapters.serve.startup import SLACK_TOKEN_ERRORS, StartupError
from adapters.surfaces.slack.calls import slack_error
from adapters.surfaces.slack.groups import SlackGroups

BOT_TOKEN, SCOPES, SIGNING, SOCKET = (
    "Slack bot token", "Slack scopes", "Slack signing secret", "Slack Socket Mode",
)  # fmt: skip
BOT_SCOPES = frozenset({
    "app_mentions:read", "channels:history", "groups:history", "im:history", "chat:write",
    "commands", "files:read", "im:write", "users:read", "users:read.email", "channels:read",
    "groups:read", "usergroups:read", "assistant:write",
})  # fmt: skip
SCOPES_HEADER = "x-oauth-scopes"
SLACK_API_URL = "https://slack.com/api/"
TOKEN_FIX = (
    "set SLACK_BOT_TOKEN to the Bot User OAuth Token (xoxb-…) under OAuth & Permissions of "  # noqa: S105
    "the app installed in your workspace"
)
SCOPES_FIX = (
    "add them under OAuth & Permissions (or paste manifest.yml again) and reinstall the app"
)
UNSET = "SLACK_BOT_TOKEN and SLACK_SIGNING_SECRET are unset: Slack is not served"


def configured(settings: Settings) -> bool:
    return any((settings.slack_bot_token, settings.slack_signing_secret, settings.slack_app_token))


def client(settings: Settings) -> AsyncWebClient | None:
    """A Web API client with the bot token, as `serve` makes it (None: no token)."""
    if settings.slack_bot_token is None:
        return None
    token = settings.slack_bot_token.get_secret_value()
    return AsyncWebClient(token=token, base_url=settings.slack_api_url or SLACK_API_URL)


def group_source(settings: Settings) -> SlackGroups | None:
    """The policy's Slack user groups, read with the bot token."""
    web = client(settings)
    return SlackGroups(web) if web is not None else None


async def bot_token(settings: Settings) -> list[Result]:
    """The bot token is one Slack accepts, of a bot, with the manifest's scopes."""
    web = client(settings)
    if web is None or settings.slack_bot_token is None:
        if not configured(settings):
            return [skipped(BOT_TOKEN, UNSET)]
        return [failed(BOT_TOKEN, "SLACK_BOT_TOKEN is unset, other Slack settings are set",
                       TOKEN_FIX)]  # fmt: skip
    shown = shown_secret(settings.slack_bot_token.get_secret_value())
    try:
        answer = await web.auth_test()
    except SlackApiError as err:
        code = slack_error(err)
        if code in SLACK_TOKEN_ERRORS:
            return [failed(BOT_TOKEN, f"Slack refused SLACK_BOT_TOKEN ({shown}): {code}",
                           TOKEN_FIX)]  # fmt: skip
        return [failed(BOT_TOKEN, f"Slack at {web.base_url} answered {code}", _LATER)]
    except (TimeoutError, aiohttp.ClientError, OSError) as err:
        return [failed(BOT_TOKEN, f"cannot reach Slack at {web.base_url} ({err!r})", _NETWORK)]
    if not answer.get("bot_id"):
        return [failed(BOT_TOKEN, f"SLACK_BOT_TOKEN ({shown}) is not a bot token", TOKEN_FIX)]
    who = f"{answer.get('user')} in {answer.get('team')} ({answer.get('team_id')})"
    return [passed(BOT_TOKEN, f"SLACK_BOT_TOKEN ({shown}) is the bot {who}"),
            scopes(answer.headers)]  # fmt: skip


_LATER = "try again later; if it persists, check SLACK_API_URL and Slack's status"
_NETWORK = "check the network to Slack, or SLACK_API_URL if it is set"


def scopes(headers: Mapping[str, Any]) -> Result:
    """The token's scopes (`x-oauth-scopes`) against the manifest's."""
    listed = next((v for k, v in headers.items() if k.lower() == SCOPES_HEADER), None)
    if listed is None:
        return skipped(SCOPES, f"Slack did not list the token's scopes ({SCOPES_HEADER})")
    granted = {scope.strip() for scope in str(listed).split(",") if scope.strip()}
    missing = sorted(BOT_SCOPES - granted)
    if missing:
        return failed(SCOPES, f"the bot token lacks {', '.join(missing)}", SCOPES_FIX)
    return passed(SCOPES, f"the bot token has the manifest's {len(BOT_SCOPES)} scopes")


async def signing_secret(settings: Settings) -> list[Result]:
    secret = settings.slack_signing_secret
    if secret is not None and secret.get_secret_value().strip():
        return [
            passed(
                SIGNING, f"SLACK_SIGNING_SECRET is set ({shown_secret(secret.get_secret_value())})"
            )
        ]
    if not configured(settings):
        return [skipped(SIGNING, UNSET)]
    return [failed(SIGNING, "SLACK_SIGNING_SECRET is unset: `serve` refuses to start",
                   "set it to the Signing Secret under Basic Information of the app")]  # fmt: skip


async def socket_mode(settings: Settings) -> list[Result]:
    """The app-level token opens a Socket Mode connection (the URL handed out is not used)."""
    from adapters.surfaces.slack.socket_mode import open_connection

    if settings.slack_app_token is None:
        return [skipped(SOCKET, "SLACK_APP_TOKEN is unset: Slack posts its events over HTTP")]
    token = settings.slack_app_token.get_secret_value()
    web = AsyncWebClient(base_url=settings.slack_api_url or SLACK_API_URL)
    try:
        await open_connection(web, token, attempts=1)
    except StartupError as err:
        return [failed(SOCKET, f"SLACK_APP_TOKEN ({shown_secret(token)}): {err}",
                       "set SLACK_APP_TOKEN to an app-level token (xapp-…) with "
                       "connections:write, or unset it for HTTP")]  # fmt: skip
    return [passed(SOCKET, f"SLACK_APP_TOKEN ({shown_secret(token)}) opens a connection")]
