"""The real service (`Server.start`) on loopback with Teams enabled, FakeBotConnector and
FakeAnthropic behind it.

Teams' side is played over HTTP in the Bot Framework's wire format: activities (messages, and
`adaptiveCard/action` invokes, manual and automatic) are posted to the running server's
`/api/messages` with `serviceUrl` pointing at FakeBotConnector, where the bot's own Teams SDK
client posts and updates its activities; its anthropic SDK talks to FakeAnthropic. Nothing of
ours is mocked. The service runs with HITL_TEAMS_ALLOW_UNAUTHENTICATED=1 (no credentials:
activities unverified, replies sent without a token); test_auth.py covers the credentials.
Waiting is event-driven (`FakeBotConnector.wait_for`), bounded by `WAIT`.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.serve.service import Server
from adapters.serve.settings import Settings
from adapters.surfaces.teams.stop_card import TURN_LINE
from bot.records import RequestRecord
from bot.store import SqlStore, upgrade
from tests.conformance import VENDORED, conformance_file
from tests.fakes.anthropic_api import FakeAnthropic, RecordedRequest
from tests.fakes.bot_connector import Call, FakeBotConnector, card_errors, cards_of

MODEL = "claude-sonnet-4-6"  # not deprecated: the SDK would warn (an error here) otherwise
WAIT = 5.0  # upper bound for anything a test awaits; only a broken test ever reaches it
CARD_TYPE = "application/vnd.microsoft.card.adaptive"
TENANT = "00000000-0000-0000-0000-0000000te4a7"
BOT = {"id": "28:00000000-0000-0000-0000-000000000b07", "name": "hitl-bridge"}
# The Adaptive Card 1.5 schema (the copy in tests/conformance_data): FakeBotConnector checks
# every card the bot sends against it, and the tests check the cards of invoke responses.
SCHEMAS = VENDORED / "teams"

JSON = dict[str, Any]


@dataclass(frozen=True)
class User:
    """A Teams user: AAD object id (the core's actor), Bot Framework id, display name."""

    aad: str
    id: str
    name: str

    @property
    def account(self) -> JSON:
        return {"id": self.id, "name": self.name, "aadObjectId": self.aad}


ALICE = User("aad-0000-alice", "29:1alice-bf-id", "Alice Archer")  # the requests' actor
STRANGER = User("aad-0000-mallory", "29:1mallory-bf-id", "Mallory Moss")  # may not answer
ADMIN = User("aad-0000-admin", "29:1admin-bf-id", "Ada Admin")  # in HITL_ADMINS
# Approvers a policy file names: rules name Teams users by their AAD object ids, GUIDs.
BOB = User("0b0b0000-0000-4000-8000-00000000b0b0", "29:1bob-bf-id", "Bob Baker")
CAROL = User("0ca20000-0000-4000-8000-000000000ca2", "29:1carol-bf-id", "Carol Chen")

PERSONAL = "a:1personal-chat-with-alice"
CHANNEL = "19:general0channel@thread.tacv2"
GROUP = "19:group0chat@thread.v2"

_ids = itertools.count(1)


def new_id(prefix: str = "act") -> str:
    return f"{prefix}-{next(_ids)}"


def conversation(conversation_id: str) -> JSON:
    kind = (
        "personal"
        if conversation_id.startswith("a:")
        else "channel"
        if conversation_id.startswith(CHANNEL)
        else "groupChat"
    )
    return {"id": conversation_id, "conversationType": kind, "tenantId": TENANT}


def message_activity(
    service_url: str,
    text: str,
    *,
    conversation_id: str = PERSONAL,
    user: User = ALICE,
    mention: bool = False,
    activity_id: str | None = None,
) -> JSON:
    """A message as Teams delivers it; `mention` puts `<at>hitl-bridge</at>` and its entity."""
    entities: list[JSON] = []
    if mention:
        tag = f"<at>{BOT['name']}</at>"
        text = f"{tag} {text}"
        entities.append({"type": "mention", "text": tag, "mentioned": dict(BOT)})
    return {
        "type": "message",
        "id": activity_id or new_id(),
        "timestamp": "2026-01-01T00:00:00.000Z",
        "channelId": "msteams",
        "serviceUrl": service_url,
        "from": user.account,
        "conversation": conversation(conversation_id),
        "recipient": dict(BOT),
        "text": text,
        "textFormat": "plain",
        "entities": entities,
        "channelData": {"tenant": {"id": TENANT}},
        "locale": "en-US",
    }


def invoke_activity(
    service_url: str,
    verb: str,
    request_id: str,
    *,
    conversation_id: str = PERSONAL,
    user: User = ALICE,
    inputs: Mapping[str, Any] | None = None,
    trigger: str | None = "manual",
    reply_to: str | None = None,
) -> JSON:
    """An `adaptiveCard/action` invoke: Teams merges the card's input values into `data`."""
    value: JSON = {
        "action": {
            "type": "Action.Execute",
            "verb": verb,
            "data": {"request_id": request_id, **(inputs or {})},
        }
    }
    if trigger is not None:
        value["trigger"] = trigger
    activity: JSON = {
        "type": "invoke",
        "name": "adaptiveCard/action",
        "id": new_id("invoke"),
        "channelId": "msteams",
        "serviceUrl": service_url,
        "from": user.account,
        "conversation": conversation(conversation_id),
        "recipient": dict(BOT),
        "value": value,
        "channelData": {"tenant": {"id": TENANT}},
        "locale": "en-US",
    }
    if reply_to is not None:
        activity["replyToId"] = reply_to
    return activity


# -- cards ---------------------------------------------------------------------------------------


def _walk(node: Any) -> Any:
    """Every dict of a card, depth first, in order."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for item in node:
            yield from _walk(item)


def executes(card: Mapping[str, Any]) -> list[JSON]:
    """A card's Action.Execute buttons, on the card or in the cards its buttons show, in order
    (not the refresh clause's)."""
    parts = [card.get("body"), card.get("actions")]
    return [n for n in _walk(parts) if n.get("type") == "Action.Execute"]


def verbs(card: Mapping[str, Any]) -> list[str]:
    """The verbs of a card's buttons (a form's submit included)."""
    return [a["verb"] for a in executes(card)]


def inputs_of(card: Mapping[str, Any]) -> dict[str, JSON]:
    """A card's inputs by id, in its body and in the cards its buttons show."""
    parts = [card.get("body"), card.get("actions")]
    return {n["id"]: n for n in _walk(parts) if str(n.get("type", "")).startswith("Input.")}


def is_live(card: Mapping[str, Any]) -> bool:
    """Whether a card has controls (answer buttons or inputs)."""
    return bool(verbs(card) or inputs_of(card))


def request_id_of(card: Mapping[str, Any]) -> str:
    """The request a card's refresh clause (or any button) points at."""
    refresh = card.get("refresh")
    if refresh:
        return str(refresh["action"]["data"]["request_id"])
    return str(executes(card)[0]["data"]["request_id"])


def is_stop_card(card: Mapping[str, Any]) -> bool:
    """A running turn's Stop card (adapters/surfaces/teams/stop_card.py), not a request's."""
    return any(n.get("id") == TURN_LINE for n in _walk(card.get("body")))


def is_live_run(call: Call) -> bool:
    """A call that shows a turn live (live_run.py): a typing indicator, a streamed message's
    typing pieces (its final message is a reply), the Stop card."""
    return call.body.get("type") == "typing" or any(map(is_stop_card, cards_of(call.body)))


def message_calls(connector: FakeBotConnector) -> list[Call]:
    """The calls that post or update replies and request cards (not `is_live_run`)."""
    return [call for call in connector.calls if not is_live_run(call)]


def text_of(card: Mapping[str, Any]) -> str:
    return json.dumps(card, ensure_ascii=False)


@dataclass
class CardReply:
    """The body of an invoke response, checked: `statusCode` 200 and an Adaptive Card."""

    body: JSON

    @property
    def card(self) -> JSON:
        assert self.body["statusCode"] == 200, self.body
        assert self.body["type"] == CARD_TYPE, self.body
        card: JSON = self.body["value"]
        assert card_errors(card) == [], card_errors(card)
        return card


# -- the conversation a test talks in ----------------------------------------------------------


@dataclass
class Chat:
    """A conversation the test talks to the bot in."""

    env: Env
    conversation_id: str  # where the bot posts (a channel's reply chain included)

    @property
    def room_id(self) -> str:
        return f"teams:{self.conversation_id}"

    def bot_activities(self) -> list[JSON]:
        """The bot's activities in the conversation, current versions, oldest first."""
        return self.env.connector.activities(self.conversation_id)

    def card_activities(self) -> list[JSON]:
        """The request cards (not a turn's Stop card)."""
        found = [(a, cards_of(a)) for a in self.bot_activities()]
        return [a for a, cards in found if cards and not any(map(is_stop_card, cards))]

    def texts(self) -> list[str]:
        """The bot's plain replies."""
        return [a["text"] for a in self.bot_activities() if not cards_of(a) and a.get("text")]

    def versions(self, activity_id: str) -> list[JSON]:
        """Every card an activity showed, oldest first."""
        versions = self.env.connector.versions(self.conversation_id, activity_id)
        return [card for version in versions for card in cards_of(version)]

    def card(self, activity_id: str) -> JSON:
        (card,) = cards_of(self.env.connector.activity(self.conversation_id, activity_id))
        return card

    async def request(self, n: int = 1) -> tuple[str, JSON]:
        """The `n`-th request card as posted while executing (with its refresh clause): the
        activity id and that card, found in the edit history even if it has moved on."""

        def executing() -> tuple[str, JSON] | None:
            found = []
            for activity in self.card_activities():
                pending = [c for c in self.versions(activity["id"]) if c.get("refresh")]
                if pending:
                    found.append((activity["id"], pending[-1]))
            return found[n - 1] if len(found) >= n else None

        result = await self.env.connector.wait_for(executing, WAIT)
        assert result is not None
        return result

    async def settled(self, activity_id: str, marker: str) -> JSON:
        """The card once updated to a state without a refresh clause that says `marker`."""

        def done() -> JSON:
            card = self.card(activity_id)
            return {} if card.get("refresh") or marker not in text_of(card) else card

        return await self.env.connector.wait_for(done, WAIT)

    async def reply(self, n: int = 1) -> str:
        """The bot's `n`-th plain reply."""
        await self.env.connector.wait_for(lambda: len(self.texts()) >= n, WAIT)
        return self.texts()[n - 1]

    async def invoke(
        self,
        verb: str,
        request_id: str,
        *,
        user: User = ALICE,
        inputs: Mapping[str, Any] | None = None,
        trigger: str | None = "manual",
    ) -> CardReply:
        """Click (or refresh) a card: the invoke's HTTP 200 response body."""
        activity = invoke_activity(
            self.env.connector.service_url,
            verb,
            request_id,
            conversation_id=self.conversation_id,
            user=user,
            inputs=inputs,
            trigger=trigger,
        )
        status, body = await self.env.post(activity)
        assert status == 200, body
        return CardReply(body)


@dataclass
class Env:
    """The running service and the fakes around it."""

    server: Server
    connector: FakeBotConnector
    model: FakeAnthropic
    http: aiohttp.ClientSession
    posted: list[JSON] = field(default_factory=list)

    @property
    def messages_url(self) -> str:
        return f"{self.server.url}/api/messages"

    @property
    def store(self) -> SqlStore:
        return self.server.service.store

    async def post(
        self, activity: Mapping[str, Any], headers: Mapping[str, str] | None = None
    ) -> tuple[int, Any]:
        """POST an activity to /api/messages as the Bot Framework does; (status, JSON body)."""
        self.posted.append(dict(activity))
        async with self.http.post(
            self.messages_url, json=activity, headers=dict(headers or {})
        ) as response:
            text = await response.text()
            return response.status, json.loads(text) if text else None

    async def say(
        self,
        text: str,
        *,
        conversation_id: str = PERSONAL,
        user: User = ALICE,
        mention: bool | None = None,
    ) -> Chat:
        """A person writes to the bot (mentioning it outside a personal chat); the chat where
        the bot answers (in a channel, the reply chain the message starts)."""
        mention = conversation_id != PERSONAL if mention is None else mention
        if conversation_id == CHANNEL:  # a new post: its id (numeric) roots the reply chain
            root = self.connector.new_id()
            activity = message_activity(
                self.connector.service_url, text, conversation_id=CHANNEL, user=user,
                mention=mention, activity_id=root,
            )  # fmt: skip
            chat = Chat(self, f"{CHANNEL};messageid={root}")
        else:
            activity = message_activity(
                self.connector.service_url, text, conversation_id=conversation_id, user=user,
                mention=mention,
            )  # fmt: skip
            chat = Chat(self, conversation_id)
        status, body = await self.post(activity)
        assert status == 200, body
        return chat

    async def record(self, request_id: str) -> RequestRecord:
        record = await self.store.get_request(request_id)
        assert record is not None
        return record

    def tool_result(self, n: int) -> JSON:
        """The one tool_result the model was sent in its `n`-th request (1-based)."""
        (result,) = self.model.requests[n - 1].tool_results
        return result

    @property
    def requests(self) -> list[RecordedRequest]:
        return self.model.requests


StartEnv = Callable[..., Awaitable[Env]]


@pytest.fixture
async def start_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[StartEnv]:
    """`await start_env(HITL_TIMEOUT_SECONDS=0.3, ...)`: the service with these settings."""
    for name in list(os.environ):
        if name.startswith(("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")) or name in (
            "CLIENT_ID", "CLIENT_SECRET", "TENANT_ID", "MANAGED_IDENTITY_CLIENT_ID", "CLOUD",
            "SERVICE_URL", "DANGEROUSLY_ALLOW_UNAUTHENTICATED_REQUESTS",
        ):  # fmt: skip
            monkeypatch.delenv(name)
    monkeypatch.setenv("HITL_TEAMS_SCHEMA_DIR", str(SCHEMAS))
    async with AsyncExitStack() as stack:

        async def start(
            connector_options: Mapping[str, Any] | None = None, **overrides: Any
        ) -> Env:
            """`connector_options`: FakeBotConnector's (its stream rules)."""
            swagger = conformance_file("teams/bot-connector.swagger.json")
            connector = await stack.enter_async_context(
                FakeBotConnector(swagger=swagger, **(connector_options or {}))
            )
            model = await stack.enter_async_context(FakeAnthropic())
            http = await stack.enter_async_context(aiohttp.ClientSession())
            url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
            await upgrade(url)
            values: dict[str, Any] = {
                "HITL_DATABASE_URL": url,
                "HITL_HOST": "127.0.0.1",
                "HITL_PORT": 0,
                "HITL_TEAMS_ALLOW_UNAUTHENTICATED": True,
                "HITL_ADMINS": ADMIN.aad,
                "ANTHROPIC_API_KEY": "test",
                "ANTHROPIC_BASE_URL": model.base_url,
                "HITL_MODEL": MODEL,
                "HITL_TIMEOUT_SECONDS": 30,
                "HITL_TEAMS_STREAM_INTERVAL": 0,  # the fake takes pieces at any pace
                **overrides,
            }
            settings = Settings(_env_file=None, **values)
            server = await Server.start(settings)
            stack.push_async_callback(server.stop)
            return Env(server=server, connector=connector, model=model, http=http)

        yield start


@pytest.fixture
async def env(start_env: StartEnv) -> Env:
    return await start_env()
