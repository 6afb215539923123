"""The A2A door's tests run the service as the HTTP API's do (the fake Slack around it), and
call it with the a2a-sdk's own client."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from a2a.client import (
    A2ACardResolver,
    AuthInterceptor,
    Client,
    ClientCallContext,
    ClientConfig,
    ClientFactory,
    InMemoryContextCredentialStore,
)
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import AgentCard, Message, Role, SendMessageRequest, StreamResponse
from google.protobuf.json_format import ParseDict
from google.protobuf.struct_pb2 import Struct

from bot.doors.tokens import Tokens
from bot.store.doors import DoorTables
from tests.adapters.surfaces.slack.conftest import ALICE, CHANNEL, Env, StartEnv, start_env

__all__ = ["start_env"]

TO = f"slack:{CHANNEL}/{ALICE}"
SESSION = "test-session"
APPROVAL = {"action": "Deploy v2 to production", "reason": "Release day"}


@dataclass
class Caller:
    """An A2A client of the served bridge, as a caller holding a token makes one: the card
    read, the token given to the card's bearer scheme, each call made in one session."""

    env: Env
    token: str
    card: AgentCard
    http: httpx.AsyncClient

    @asynccontextmanager
    async def client(self, binding: str = "JSONRPC", *, streaming: bool = False,
                     polling: bool = False) -> AsyncIterator[Client]:  # fmt: skip
        credentials = InMemoryContextCredentialStore()
        await credentials.set_credentials(SESSION, "bearer", self.token)
        config = ClientConfig(streaming=streaming, polling=polling, httpx_client=self.http,
                              supported_protocol_bindings=[binding])  # fmt: skip
        client = ClientFactory(config).create(self.card, [AuthInterceptor(credentials)])
        async with client:
            yield client

    @property
    def context(self) -> ClientCallContext:
        return ClientCallContext(state={"sessionId": SESSION})

    async def events(self, client: Client, message: Message) -> AsyncIterator[StreamResponse]:
        async for event in client.send_message(SendMessageRequest(message=message),
                                               context=self.context):  # fmt: skip
            yield event


def asking(tool: str = "requestApproval", arguments: Mapping[str, Any] = APPROVAL,
           to: str = TO, **more: Any) -> Message:  # fmt: skip
    """A message asking with a data part {tool, arguments, to}."""
    data = {"tool": tool, "arguments": dict(arguments), "to": to, **more}
    return Message(
        role=Role.ROLE_USER, message_id=secrets.token_hex(8), parts=[new_data_part(data)]
    )


def questioning(text: str, metadata: Mapping[str, Any]) -> Message:
    """A message asking in words, who is asked in its metadata."""
    message = Message(
        role=Role.ROLE_USER, message_id=secrets.token_hex(8), parts=[new_text_part(text)]
    )
    message.metadata.CopyFrom(ParseDict(dict(metadata), Struct()))
    return message


@asynccontextmanager
async def calling(start: StartEnv, **settings: Any) -> AsyncIterator[Caller]:
    env = await start(**settings)
    env.slack.channels.add(CHANNEL)
    plain, _ = await Tokens(DoorTables(env.store)).create("a2a-agent")
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, env.server.url).get_agent_card()
        yield Caller(env, plain, card, http)
