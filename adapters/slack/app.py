"""The Slack app: slack-bolt's AsyncApp wired to the core (conversations, interactions, edits)."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import Coroutine
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response, to_bolt_request
from slack_bolt.app.async_app import AsyncApp
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
    AsyncServerErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.conversations import Conversations
from adapters.slack.interactions import Interactions
from adapters.slack.messages import pending_summary
from adapters.slack.rooms import PREFIX as ROOM_PREFIX
from adapters.slack.scheme import ACTION_PREFIX, MODAL_CALLBACK_PREFIX
from adapters.slack.surface import SlackSurface
from bot import AIChannel, Bridge
from bot.records import RequestStore
from bot.requests.router import Router

log = logging.getLogger(__name__)

SLASH_COMMAND = "/hitl"

SLACK_API_URL = "https://slack.com/api/"


def slack_client(token: str, api_url: str | None = None) -> AsyncWebClient:
    """A Web API client that retries 429 (honouring Retry-After), 5xx and dropped connections."""
    return AsyncWebClient(
        token=token,
        base_url=api_url or SLACK_API_URL,
        retry_handlers=[
            AsyncRateLimitErrorRetryHandler(max_retry_count=3),
            AsyncServerErrorRetryHandler(max_retry_count=2),
            AsyncConnectionErrorRetryHandler(max_retry_count=2),
        ],
    )


class SlackAdapter:
    """Everything Slack: Bolt listeners, the surface that posts and edits, the HTTP endpoint."""

    def __init__(
        self,
        *,
        bridge: Bridge,
        channel: AIChannel,
        client: AsyncWebClient,
        signing_secret: str,
        store: RequestStore,
        router: Router,
    ) -> None:
        """`router` answers every click, submission and thread reply (one for all surfaces)."""
        self.client = client
        self.store = store
        self.bot_user_id = ""
        self._own_session = False
        self._work: set[asyncio.Task[None]] = set()
        # process_before_response: Bolt answers Slack when the listener returns (instead of
        # polling for the ack), so our listeners ack and hand everything slow to `_later`.
        self.app = AsyncApp(
            client=client, signing_secret=signing_secret, process_before_response=True
        )
        self.surface = SlackSurface(client, store, router.tools)
        bridge.attach(self.surface)
        self.conversations = Conversations(
            channel=channel,
            surface=self.surface,
            store=store,
            router=router,
            bot_user_id=lambda: self.bot_user_id,
        )
        self.interactions = Interactions(
            client=client, surface=self.surface, router=router, later=self._later
        )
        self._register()

    def _register(self) -> None:
        app = self.app
        app.event("app_mention")(self._on_mention)
        app.event("message")(self._on_message)
        app.action(re.compile(f"^{ACTION_PREFIX}"))(self.interactions.on_action)
        app.view(re.compile(f"^{re.escape(MODAL_CALLBACK_PREFIX)}"))(self.interactions.on_view)
        app.command(SLASH_COMMAND)(self._on_command)

    async def _on_command(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        """/hitl [pending]: the requests waiting for an answer in this channel, privately."""
        channel = str(command.get("channel_id", ""))
        prefix = f"{ROOM_PREFIX}{channel}:"
        waiting = [r for r in await self.store.list_pending() if r.room_id.startswith(prefix)]
        await ack(text=pending_summary(waiting), response_type="ephemeral")

    async def _on_mention(self, ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        self._later(self.conversations.on_message(event, mentioned=True))

    async def _on_message(self, ack: AsyncAck, event: dict[str, Any]) -> None:
        await ack()
        self._later(self.conversations.on_message(event, mentioned=False))

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` after the response to Slack: awaited in a listener, it would delay the
        ack (Slack allows 3 s) by every store write and Web API call it makes."""
        task = asyncio.create_task(_logged(work))
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    async def start(self) -> None:
        """Open one HTTP session for every Web API call (without it slack_sdk opens a session
        and a connection per call), then learn who the bot is (auth.test): its own messages
        are ignored, its mention stripped."""
        if self.client.session is None:
            self.client.session = aiohttp.ClientSession()
            self._own_session = True
        auth = await self.client.auth_test()
        self.bot_user_id = str(auth["user_id"])

    async def handle(self, request: web.Request) -> web.Response:
        """POST /slack/events: Bolt verifies the signature (401 if bad or stale) and dispatches."""
        response = await self.app.async_dispatch(await to_bolt_request(request))
        return await to_aiohttp_response(response)

    async def close_clients(self) -> None:
        """After the bridge's last edits: close the HTTP session opened by start()."""
        if self._own_session and self.client.session is not None:
            await self.client.session.close()
            self.client.session = None

    async def close(self) -> None:
        """Finish the work of requests already acked, then cancel the turns still running."""
        while self._work:
            await asyncio.gather(*self._work, return_exceptions=True)
        await self.conversations.close()


async def _logged(work: Coroutine[Any, Any, None]) -> None:
    try:
        await work
    except Exception:
        log.exception("handling a Slack request after its ack failed")
