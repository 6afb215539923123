"""The Bot Connector: posting and updating a conversation's activities through the Teams SDK's
`ApiClient`, retried when Teams is busy or briefly away.

A failed call is retried (429 honouring Retry-After, 5xx and dropped connections, with backoff)
and, if it still fails, logged as an error: never dropped silently. `*_or_fail` calls raise
ConnectorError saying why instead (a request that cannot be posted is undeliverable).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeVar

import httpx
from microsoft_teams.api import ActivityParams, ApiClient, TypingActivityInput
from microsoft_teams.api.activities.message import MessageActivityInput
from microsoft_teams.api.models.attachment import Attachment

from bot.words.model_text import defused

log = logging.getLogger(__name__)

T = TypeVar("T")

CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
TEXT_LIMIT = 20_000  # well inside Teams' ~28 KB limit for a whole message
ATTEMPTS = 4
MAX_RETRY_AFTER = 10.0  # seconds: wait no longer than this for a 429's Retry-After


class ConnectorError(Exception):
    """A Bot Connector call that failed for good (after the retries); `str(err)` says why.
    `refusal` is the Bot Connector's own error message when it answered one (Teams tells a
    stream stopped by its user from one refused otherwise only by it)."""

    def __init__(self, said: str, refusal: str = "") -> None:
        super().__init__(said)
        self.refusal = refusal


async def call_connector(
    call: Callable[[], Awaitable[T]], what: str, *, idempotent: bool, attempts: int = ATTEMPTS
) -> T | None:
    """Run a Bot Connector call, retrying 429 (after Retry-After), 5xx and connection errors
    with backoff; None (logged as an error) if it never succeeded.

    A call that is not idempotent (a POST) is sent again only when it surely never arrived
    (the connection was not made): a timed-out post may have landed, and a second would show
    the message twice."""
    try:
        return await call_connector_or_fail(call, what, idempotent=idempotent, attempts=attempts)
    except ConnectorError:
        return None


async def call_connector_or_fail(
    call: Callable[[], Awaitable[T]], what: str, *, idempotent: bool, attempts: int = ATTEMPTS
) -> T:
    """`call_connector`, raising ConnectorError (logged) saying why when it never succeeded."""
    for attempt in range(attempts):
        delay = 0.2 * 2**attempt
        try:
            return await call()
        except httpx.HTTPStatusError as err:
            status = err.response.status_code
            if (status != 429 and status < 500) or attempt == attempts - 1:
                log.error("Bot Connector %s failed: HTTP %d %s", what, status, err.response.text)
                raise ConnectorError(
                    f"Bot Connector {what} failed: {_said(err.response)}",
                    _error_message(err.response),
                ) from None
            retry_after = _retry_after(err.response) if status == 429 else None
            if retry_after is not None:
                delay = retry_after
        except httpx.TransportError as err:
            unsent = isinstance(err, httpx.ConnectError | httpx.ConnectTimeout)
            if attempt == attempts - 1 or not (idempotent or unsent):
                log.error("Bot Connector %s failed: %r", what, err)
                raise ConnectorError(f"Bot Connector {what} failed: {type(err).__name__}") from None
        except Exception as err:  # a token that could not be had, a response we cannot read
            log.exception("Bot Connector %s failed", what)
            raise ConnectorError(f"Bot Connector {what} failed: {type(err).__name__}") from None
        await asyncio.sleep(delay)
    raise ConnectorError(f"Bot Connector {what} failed")  # attempts < 1


def _said(response: httpx.Response) -> str:
    """The HTTP status of a refusal, and the Bot Connector's error code when its body has one."""
    try:
        body = response.json()
    except Exception:  # not JSON, or a streamed body never read
        body = None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    status = f"HTTP {response.status_code}"
    return f"{status} {code}" if isinstance(code, str) and code else status


def _error_message(response: httpx.Response) -> str:
    """The `error.message` of a Bot Connector refusal, "" if its body has none."""
    try:
        body = response.json()
    except Exception:  # not JSON, or a streamed body never read
        return ""
    error = body.get("error") if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else ""


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), capped; None if absent or bad."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class Connector:
    """Posts and updates activities through the SDK's ApiClient, one per `serviceUrl`."""

    def __init__(self, client_for: Callable[[str], ApiClient]) -> None:
        self._client_for = client_for
        self._clients: dict[str, ApiClient] = {}

    def client(self, service_url: str) -> ApiClient:
        key = service_url.rstrip("/")
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = self._client_for(key)
        return client

    async def send(
        self, service_url: str, conversation_id: str, activity: ActivityParams
    ) -> str | None:
        """POST /v3/conversations/{id}/activities; the new activity's id, or None."""
        try:
            return await self.send_or_fail(service_url, conversation_id, activity)
        except ConnectorError:
            return None

    async def send_or_fail(
        self, service_url: str, conversation_id: str, activity: ActivityParams
    ) -> str:
        """`send`, raising ConnectorError saying why when it failed for good (any activity: a
        message, a typing indicator, a piece of a streamed message)."""
        conversations = self.client(service_url).conversations
        sent = await call_connector_or_fail(
            lambda: conversations.create_activity(conversation_id, activity),
            "send activity",
            idempotent=False,
        )
        return sent.id

    async def update(
        self,
        service_url: str,
        conversation_id: str,
        activity_id: str,
        activity: MessageActivityInput,
    ) -> bool:
        """PUT /v3/conversations/{id}/activities/{activityId}; whether it succeeded."""
        conversations = self.client(service_url).conversations
        updated = await call_connector(
            lambda: conversations.update_activity(conversation_id, activity_id, activity),
            "update activity",
            idempotent=True,
        )
        return updated is not None


def card_activity(card: Mapping[str, Any]) -> MessageActivityInput:
    return MessageActivityInput(
        attachments=[Attachment(content_type=CARD_CONTENT_TYPE, content=dict(card))]
    )


def typing_activity() -> TypingActivityInput:
    """The typing indicator: Teams shows it for a few seconds, or until the next message."""
    return TypingActivityInput()


def text_activity(text: str) -> MessageActivityInput:
    """The agent's words as plain text, links showing their targets, no image, no mass
    mention (bot/words/model_text.py): whatever the client renders, nothing is hidden."""
    text = defused(text)
    if len(text) > TEXT_LIMIT:
        text = text[: TEXT_LIMIT - 1] + "…"
    return MessageActivityInput(text=text, text_format="plain")
