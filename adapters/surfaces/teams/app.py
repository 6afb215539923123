"""The Teams app: the Teams SDK's `App` wired to the core (conversations, invokes, card updates).

The SDK's `App` gives us its credentials and token manager, its Bot Connector client, and the
messaging route it registers on `AiohttpAdapter` (http_adapter.py), which serves it on our
aiohttp server: every incoming activity's token is verified there by our `ActivityVerifier`
(tokens.py: the SDK's rules, without its blocking key fetch) before its body is read. Activities
that pass come to `_on_activity`, as plain JSON:

- `message`: a turn, handled after the HTTP response (conversations.py);
- `invoke` `adaptiveCard/action`: a refresh or an answer, answered with a card (invokes.py);
- anything else: 200, nothing to do.

Why not the SDK's pipeline (`app.on_message`, `app.on_card_action`): in 2.1.1 it validates
every activity against its typed models first, and `AdaptiveCardInvokeValue.trigger` is
`Literal["manual"]` (microsoft_teams/api/models/adaptive_card/adaptive_card_invoke_value.py),
so an automatic refresh (`"trigger": "automatic"`, what `refresh.userIds` makes Teams send)
fails `ActivityTypeAdapter.validate_python` in `ActivityProcessor.process_activity`
(apps/app_process.py); `HttpServer.handle_request` answers 500, Teams retries twice and the
user keeps the read-only card. The pipeline also builds an ApiClient per activity (a
DeprecationWarning each, see http_adapter.py). We read invokes from the raw activity instead.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine, Mapping
from typing import Any

from aiohttp import web
from microsoft_teams.api import InvokeResponse
from microsoft_teams.api.auth.cloud_environment import CloudEnvironment
from microsoft_teams.common import ClientOptions

from adapters.serve.http_server import TEAMS_PATH
from adapters.surfaces.teams.config import SDK_CREDENTIALS_FOUND, TeamsConfig
from adapters.surfaces.teams.connector import Connector
from adapters.surfaces.teams.conversations import COMMAND, TeamsConversations
from adapters.surfaces.teams.http_adapter import (
    AiohttpAdapter,
    close_app,
    connector_client,
    new_app,
)
from adapters.surfaces.teams.invokes import Invokes
from adapters.surfaces.teams.metered import CallRecorder, CountedConnectorCalls
from adapters.surfaces.teams.stop_card import stop_clicked
from adapters.surfaces.teams.surface import People, TeamsSurface
from adapters.surfaces.teams.tokens import ActivityVerifier
from bot import AIChannel, Bridge, ConfigurationError, HumanTool
from bot.bridge.ports import RequestStore
from bot.commands import Commands
from bot.gates.grants import Grants
from bot.requests.access import AnswerPolicy
from bot.requests.copies import CopyRefs
from bot.requests.router import Router

log = logging.getLogger(__name__)

CARD_ACTION = "adaptiveCard/action"
CONNECTOR_TIMEOUT = 15.0  # seconds per Bot Connector request (the SDK's default is none)
UNAUTHENTICATED_WARNING = (
    "Teams: HITL_TEAMS_ALLOW_UNAUTHENTICATED=1 and no credentials: incoming activities are "
    "NOT verified and replies are sent without a token. For local development and tests only."
)


class TeamsAdapter:
    """Everything Teams: the SDK's App, the surface that posts and updates cards, the endpoint."""

    def __init__(
        self,
        *,
        bridge: Bridge,
        channel: AIChannel,
        store: RequestStore,
        policy: AnswerPolicy,
        tools: Mapping[str, HumanTool],
        config: TeamsConfig,
        cloud: CloudEnvironment | None = None,
        router: Router | None = None,
        grants: Grants | None = None,
        copies: CopyRefs | None = None,
        counted: CallRecorder | None = None,
    ) -> None:
        """`router` decides every answer (one per service, shared by its surfaces); without
        one, the adapter builds its own from the store, the bridge, the policy and the tools.
        `grants` are listed and revoked with `@bridge hitl grants` (bot/commands/);
        `copies` keeps where a request's copies (a policy's `deliver`) were posted; `counted`
        is told of each Bot Connector attempt (the metrics, adapters/surfaces/teams/metered.py)."""
        self.config = config
        self.http = AiohttpAdapter()
        # Explicit values only: with credentials, activities are always verified.
        self.app = new_app(
            client_id=config.client_id,
            client_secret=config.client_secret,
            tenant_id=config.tenant_id,
            dangerously_allow_unauthenticated_requests=not config.authenticated,
            http_server_adapter=self.http,
            messaging_endpoint=TEAMS_PATH,
            cloud=cloud,
            client=ClientOptions(timeout=CONNECTOR_TIMEOUT),
        )
        if counted is not None:  # before any connector client is cloned from it
            self.app.http_client.use(CountedConnectorCalls(counted))
        if not config.authenticated and self.app.credentials is not None:
            raise ConfigurationError(SDK_CREDENTIALS_FOUND)
        # The SDK's token rules for the App's cloud (`cloud`, or the SDK's CLOUD variable).
        self.verifier = (
            ActivityVerifier.bot_framework(config.client_id, self.app.cloud)
            if config.client_id is not None
            else None
        )
        self.people = People()
        self._work: set[asyncio.Task[None]] = set()
        self.surface = TeamsSurface(
            Connector(lambda service_url: connector_client(self.app, service_url)),
            store,
            tools,
            self.people,
            deciders=policy.approvers | policy.admins,
            copies=copies,
        )
        bridge.attach(self.surface)
        self.router = router or Router(
            store=store, handler_for=bridge.handler_for, policy=policy, tools=tools
        )
        # The policy's Entra groups, read for the cards' refresh lists as for the clicks.
        self.surface.refresh.directory = self.router.deciders.directory
        commands = Commands(
            store, policy, grants, command=f"@hitl-bridge {COMMAND}", router=self.router,
            surface="teams",
        )  # fmt: skip
        self.conversations = TeamsConversations(
            channel=channel, surface=self.surface, store=store, people=self.people,
            commands=commands, deciders=self.router.deciders, router=self.router,
            stream_interval=config.stream_interval,
        )  # fmt: skip
        self.invokes = Invokes(surface=self.surface, router=self.router, people=self.people)

    async def start(self) -> None:
        """Initialize the SDK App (the messaging route); take its activities."""
        if not self.config.authenticated:
            log.warning(UNAUTHENTICATED_WARNING)
        await self.app.initialize()
        self.http.serve(self._on_activity, self.verifier)

    async def handle(self, request: web.Request) -> web.StreamResponse:
        """POST /api/messages: the token verified (401 if missing or bad), then the body read
        (413 if too large, 400 if not an activity), then `_on_activity`."""
        return await self.http.handle(request)

    async def _on_activity(self, activity: dict[str, Any]) -> InvokeResponse[Any]:
        kind = activity.get("type")
        if kind == "invoke" and activity.get("name") == CARD_ACTION:
            return InvokeResponse[Any](status=200, body=await self._card_action(activity))
        if kind == "message":
            self._later(self.conversations.on_message(activity))
        return InvokeResponse[Any](status=200)

    async def _card_action(self, activity: dict[str, Any]) -> dict[str, Any]:
        """A click on a running turn's Stop, or on a request's card."""
        room_id = stop_clicked(activity.get("value"))
        if room_id is not None:
            return await self.conversations.on_stop_click(activity, room_id)
        return await self.invokes.on_action(activity)

    def _later(self, work: Coroutine[Any, Any, None]) -> None:
        """Run `work` after the HTTP response: a turn's first step (a store write) would
        otherwise delay it."""
        task = asyncio.create_task(_logged(work))
        self._work.add(task)
        task.add_done_callback(self._work.discard)

    async def close(self) -> None:
        """Finish the work of activities already answered, then cancel the turns still running
        (their requests are withdrawn: the cards are updated once the bridge is drained)."""
        while self._work:
            await asyncio.gather(*self._work, return_exceptions=True)
        await self.conversations.close()

    async def close_clients(self) -> None:
        """Close the SDK's HTTP clients (after the bridge is closed: its card updates use
        them) and the verifier's."""
        if self.verifier is not None:
            await self.verifier.close()
        await close_app(self.app)


async def _logged(work: Coroutine[Any, Any, None]) -> None:
    try:
        await work
    except Exception:
        log.exception("handling a Teams activity after its response failed")
