"""Slack Web API calls, retried: backoff on transient errors, one line for a call that fails
for good (its `error` code, or the HTTP status of a body that was not Slack's)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_sdk.errors import SlackApiError

log = logging.getLogger("adapters.surfaces.slack.surface")  # where these lines were always logged

ATTEMPTS = 4
# Errors that another attempt cannot fix: the payload, the target or the token is wrong.
FATAL_ERRORS = frozenset({
    "invalid_blocks", "invalid_arguments", "msg_too_long", "no_text", "message_not_found",
    "channel_not_found", "not_in_channel", "is_archived", "cant_update_message",
    "invalid_auth", "not_authed", "account_inactive", "token_revoked", "missing_scope",
    "user_not_found", "user_not_in_channel", "expired_trigger_id", "invalid_trigger_id",
    # a streamed reply's (adapters/surfaces/slack/live_run.py): not available here, or already
    # stopped
    "not_allowed", "unknown_method", "missing_recipient_user_id", "missing_recipient_team_id",
    "invalid_chunks", "message_not_in_streaming_state",
})  # fmt: skip


class SlackCallError(Exception):
    """A Web API call that failed for good (after the retries); `str(err)` says why, `error`
    is Slack's error code when Slack answered one ("" for a transport failure)."""

    def __init__(self, message: str, error: str = "") -> None:
        super().__init__(message)
        self.error = error


def slack_error(err: SlackApiError) -> str:
    """The `error` code of a failed call, or its HTTP status when the body was not Slack's
    JSON (a proxy's HTML page, a truncated body): never raises on an odd response."""
    response: Any = err.response
    data = getattr(response, "data", None)
    if isinstance(data, dict) and data.get("error"):
        return str(data["error"])
    status = getattr(response, "status_code", None) or getattr(response, "status", None)
    return f"HTTP {status}" if status else "an unreadable response"


async def call_slack(
    call: Callable[[], Awaitable[Any]], what: str, attempts: int = ATTEMPTS
) -> Any | None:
    """Run a Web API call with backoff on transient errors; None (logged) if it never succeeded."""
    try:
        return await call_slack_or_fail(call, what, attempts)
    except SlackCallError:
        return None


async def call_slack_or_fail(
    call: Callable[[], Awaitable[Any]], what: str, attempts: int = ATTEMPTS
) -> Any:
    """Run a Web API call with backoff on transient errors; SlackCallError (logged) saying why
    if it never succeeded."""
    for attempt in range(attempts):
        try:
            return await call()
        except SlackApiError as err:
            error = slack_error(err)
            if error in FATAL_ERRORS or attempt == attempts - 1:
                log.error("Slack %s failed: %s", what, error)
                raise SlackCallError(f"Slack {what} failed: {error}", error) from None
        except (TimeoutError, OSError) as err:
            if attempt == attempts - 1:
                log.error("Slack %s failed: %s", what, err)
                raise SlackCallError(f"Slack {what} failed: {err or type(err).__name__}") from None
        await asyncio.sleep(0.2 * 2**attempt)
    raise SlackCallError(f"Slack {what} failed")  # attempts < 1
