"""The real service (`Server.start`) on loopback, with FakeSlack and FakeAnthropic behind it.

Slack's side is played over HTTP in its wire format: signed Events API envelopes and
interactivity payloads are posted to the running server's `/slack/events`; the bot's own
slack_sdk client talks to FakeSlack, its anthropic SDK to FakeAnthropic. Nothing of ours is
mocked. Waiting is event-driven (FakeSlack's `wait_for`), bounded by `WAIT` so a broken test
fails quickly instead of hanging.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from adapters.ops.observability import TracingFor
from adapters.serve.service import Server
from adapters.serve.settings import Settings
from adapters.surfaces.slack.run_chunks import STOP_BLOCK_ID
from bot.records import RequestRecord
from bot.store import SqlStore, upgrade
from tests.conformance import conformance_file
from tests.fakes.anthropic_api import FakeAnthropic, RecordedRequest
from tests.fakes.slack_api import BOT_USER_ID, FakeSlack
from tests.fakes.slack_signing import (
    block_actions_payload,
    event_callback,
    message_event,
    post_signed,
    view_submission_payload,
)

SECRET = "e2e-signing-secret"
MODEL = "claude-sonnet-4-6"  # not deprecated: the SDK would warn (an error here) otherwise
CHANNEL = "C0GENERAL01"
ALICE = "U0ALICE001"  # the person who mentions the bot: the requests' actor
STRANGER = "U0MALLORY1"  # in the channel, but not allowed to answer Alice's requests
ADMIN = "U0ADMIN001"
WAIT = 5.0  # upper bound for anything a test awaits; only a broken test ever reaches it

JSON = dict[str, Any]


def block_kit_schemas() -> Path | None:
    """The folder of Slack's Block Kit schemas, which FakeSlack then checks everything sent
    against (HITL_SLACK_SCHEMA_DIR), when there is conformance data (tests/conformance.py)."""
    message = conformance_file("slack/blockkit-message.schema.json")
    modal = conformance_file("slack/blockkit-modal.schema.json")
    return message.parent if message is not None and modal is not None else None


def has_actions(message: Mapping[str, Any]) -> bool:
    """Whether a message still shows a request's interactive elements (a streamed reply's
    Stop button is the turn's, not a request's)."""
    return any(
        block.get("type") == "actions" and block.get("block_id") != STOP_BLOCK_ID
        for block in message.get("blocks") or []
    )


def action_ids(message: Mapping[str, Any]) -> list[str]:
    return [
        str(element.get("action_id"))
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


@dataclass
class Thread:
    """A conversation the test started with a mention: its root message and what followed."""

    env: Env
    ts: str  # the person's message: the thread's root and the room

    def bot_messages(self) -> list[JSON]:
        """The bot's messages in the thread, current versions, oldest first."""
        return [
            m
            for m in self.env.slack.thread(CHANNEL, self.ts)
            if m.get("user") == BOT_USER_ID and m["ts"] != self.ts
        ]

    def requests_shown(self) -> list[JSON]:
        """The bot's messages with blocks that are not a streamed reply: requests' (and a
        chooser's)."""
        return [m for m in self.bot_messages() if m.get("blocks") and not self.env.streamed(m)]

    def texts(self) -> list[JSON]:
        """The bot's plain replies in the thread: messages without blocks, and streamed
        replies once their stream is stopped (whole)."""
        streaming = self.env.slack.streaming
        return [
            m
            for m in self.bot_messages()
            if streaming(CHANNEL, m["ts"]) is False
            or (streaming(CHANNEL, m["ts"]) is None and not m.get("blocks"))
        ]

    async def request(self, n: int = 1) -> JSON:
        """The `n`-th request message as it was while executing (showing its controls).

        Read from the message's edit history, so a request that has already moved on (say,
        expired) is still found in the state a person saw and clicked.
        """

        def executing() -> JSON:
            found = []
            for message in self.bot_messages():
                live = [v for v in self.env.slack.edits(CHANNEL, message["ts"]) if has_actions(v)]
                if live:
                    found.append(live[-1])
            return found[n - 1] if len(found) >= n else {}

        return await self.env.slack.wait_for(executing, WAIT)

    async def settled(self, message: Mapping[str, Any], marker: str) -> JSON:
        """The message once edited to a state without controls whose blocks say `marker`."""

        def done() -> JSON:
            current = self.env.slack.message(CHANNEL, message["ts"])
            return {} if has_actions(current) or marker not in json.dumps(current) else current

        return await self.env.slack.wait_for(done, WAIT)

    async def reply(self, n: int = 1) -> JSON:
        """The bot's `n`-th plain reply in the thread."""
        found = await self.env.slack.wait_for(lambda: len(self.texts()) >= n, WAIT)
        assert found
        return self.texts()[n - 1]


@dataclass
class Env:
    """The running service and the fakes around it."""

    server: Server
    slack: FakeSlack
    model: FakeAnthropic
    http: aiohttp.ClientSession

    def streamed(self, message: Mapping[str, Any]) -> bool:
        """Whether a message in the channel is a streamed reply (chat.startStream)."""
        return self.slack.streaming(CHANNEL, message["ts"]) is not None

    def replies_said(self, channel: str = CHANNEL) -> list[str]:
        """The texts of the bot's replies: posted, or streamed and stopped."""
        return [
            m["text"]
            for m in self.slack.messages(channel)
            if m.get("user") == BOT_USER_ID
            and (self.slack.streaming(channel, m["ts"]) is False or not m.get("blocks"))
        ]

    @property
    def events_url(self) -> str:
        return f"{self.server.url}/slack/events"

    @property
    def store(self) -> SqlStore:
        return self.server.service.store

    async def post(
        self, payload: bytes | Mapping[str, Any], **kwargs: Any
    ) -> aiohttp.ClientResponse:
        """Post a payload signed as Slack signs it (events as JSON, interactions as a form);
        raw bytes are sent as they are."""
        return await post_signed(self.http, self.events_url, payload, SECRET, **kwargs)

    async def mention(self, text: str, *, user: str = ALICE) -> Thread:
        """A person mentions the bot in the channel (Slack stores the message, then sends
        `app_mention`); the mention starts a thread on that message."""
        full = f"<@{BOT_USER_ID}> {text}"
        root = self.slack.add_message(CHANNEL, full, user=user)
        event = message_event(
            full, user=user, channel=CHANNEL, ts=root["ts"], event_type="app_mention"
        )
        response = await self.post(event_callback(event))
        assert response.status == 200, await response.text()
        return Thread(self, root["ts"])

    async def reply_in_thread(self, thread: Thread, text: str, *, user: str = ALICE) -> None:
        """A person's reply in the thread (a `message` event)."""
        msg = self.slack.add_message(CHANNEL, text, user=user, thread_ts=thread.ts)
        event = message_event(text, user=user, channel=CHANNEL, ts=msg["ts"], thread_ts=thread.ts)
        response = await self.post(event_callback(event))
        assert response.status == 200, await response.text()

    def click_payload(
        self, message: Mapping[str, Any], action_id: str, *, user: str = ALICE, **kwargs: Any
    ) -> JSON:
        """A `block_actions` payload for a click on `action_id` in `message`."""
        return block_actions_payload(
            message=message,
            channel_id=CHANNEL,
            action_id=action_id,
            user_id=user,
            trigger_id=self.slack.new_trigger_id(),
            response_url=self.slack.new_response_url(CHANNEL, message["ts"]),
            **kwargs,
        )

    async def click(
        self, message: Mapping[str, Any], action_id: str, *, user: str = ALICE, **kwargs: Any
    ) -> aiohttp.ClientResponse:
        response = await self.post(self.click_payload(message, action_id, user=user, **kwargs))
        assert response.status == 200, await response.text()
        return response

    async def modal(self, n: int = 1) -> JSON:
        """The `n`-th modal the bot opened (views.open), as FakeSlack holds it."""
        await self.slack.wait_for(lambda: len(self.slack.views) >= n, WAIT)
        return list(self.slack.views.values())[n - 1]

    async def submit(
        self, view: Mapping[str, Any], values: Mapping[str, Mapping[str, Any]], *, user: str = ALICE
    ) -> JSON:
        """Submit a modal; returns the HTTP response body (`{}` for a plain ack)."""
        payload = view_submission_payload(view=view, user_id=user, values=values)
        response = await self.post(payload)
        assert response.status == 200, await response.text()
        body = await response.text()
        return json.loads(body) if body else {}

    async def request_record(self, message: Mapping[str, Any]) -> RequestRecord:
        """The stored request a message's buttons point at."""
        request_id = next(
            str(block["block_id"]).removeprefix("hitl_actions:")
            for block in message.get("blocks") or []
            if block.get("type") == "actions"
        )
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
    schemas = block_kit_schemas()  # before HITL_CONFORMANCE_DIR is cleared with the rest
    for name in list(os.environ):
        if name.startswith(("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_")):
            monkeypatch.delenv(name)
    if schemas is not None:
        monkeypatch.setenv("HITL_SLACK_SCHEMA_DIR", str(schemas))
    async with AsyncExitStack() as stack:

        async def start(*, tracing_for: TracingFor | None = None, **overrides: Any) -> Env:
            slack = await stack.enter_async_context(
                FakeSlack(users={ALICE: "alice", STRANGER: "mallory", ADMIN: "admin"})
            )
            model = await stack.enter_async_context(FakeAnthropic())
            http = await stack.enter_async_context(aiohttp.ClientSession())
            url = f"sqlite+aiosqlite:///{tmp_path / 'hitl.db'}"
            await upgrade(url)
            values: dict[str, Any] = {
                "HITL_DATABASE_URL": url,
                "HITL_HOST": "127.0.0.1",
                "HITL_PORT": 0,
                "SLACK_BOT_TOKEN": slack.token,
                "SLACK_SIGNING_SECRET": SECRET,
                "SLACK_API_URL": slack.base_url,
                "ANTHROPIC_API_KEY": "test",
                "ANTHROPIC_BASE_URL": model.base_url,
                "HITL_MODEL": MODEL,
                "HITL_TIMEOUT_SECONDS": 30,
                **overrides,
            }
            settings = Settings(_env_file=None, **values)
            if tracing_for is None:
                server = await Server.start(settings)
            else:  # a test's own exporter
                server = await Server.start(settings, tracing_for=tracing_for)
            stack.push_async_callback(server.stop)
            return Env(server=server, slack=slack, model=model, http=http)

        yield start


@pytest.fixture
async def env(start_env: StartEnv) -> Env:
    return await start_env()
