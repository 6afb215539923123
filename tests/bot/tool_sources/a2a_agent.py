"""A small remote agent built with the A2A SDK, served on 127.0.0.1 for the tests: its skills
ask for what a real agent would (a question, a form, an authorization) or fail.

- `deploy`: asks "Which region should <service> go to?", then completes with
  "deployed <service> to <answer>";
- `release`: asks with a JSON Schema of a form, then completes with the values as data;
- `login`: needs authorization at a link, then completes with "signed in";
- `break`: fails with "the cluster is down";
- `refuse`: rejects with "not allowed on production".
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from a2a.helpers import (
    get_data_parts,
    new_data_part,
    new_task_from_user_message,
    new_text_part,
    new_url_part,
)
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Message,
    TaskState,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

TOKEN = "a2a-agent-token-0123456789"
LOGIN_URL = "https://login.example.com/authorize?agent=deployer"
RELEASE_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "version": {"type": "string", "title": "Version"},
        "region": {"type": "string", "title": "Region", "enum": ["eu", "us"]},
    },
    "required": ["version", "region"],
}
SKILLS = ["deploy", "release", "login", "break", "refuse"]


@dataclass
class Heard:
    """What the agent was sent and asked to do, for the tests to read."""

    messages: list[Message] = field(default_factory=list)
    canceled: list[str] = field(default_factory=list)
    skills: dict[str, str] = field(default_factory=dict)  # task id -> skill
    asked: dict[str, str] = field(default_factory=dict)  # task id -> what it was first asked


class Deployer(AgentExecutor):
    def __init__(self, heard: Heard) -> None:
        self.heard = heard

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        message = context.message
        assert message is not None
        self.heard.messages.append(message)
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(message)
            await event_queue.enqueue_event(task)
            self.heard.skills[task.id] = str(dict(message.metadata).get("skill", ""))
            self.heard.asked[task.id] = context.get_user_input()
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        skill = self.heard.skills[task.id]
        first = task.status.state not in (
            TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED,
        )  # fmt: skip
        if first:
            await updater.start_work()
        await STEPS[skill](updater, context, first, self.heard.asked[task.id])

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        self.heard.canceled.append(context.task_id)
        task = context.current_task
        assert task is not None
        await TaskUpdater(event_queue, task.id, task.context_id).cancel()


async def deploy(updater: TaskUpdater, context: RequestContext, first: bool, asked: str) -> None:
    service = asked.removeprefix("deploy ").strip()
    if first:
        question = f"Which region should {service} go to?"
        await updater.requires_input(updater.new_agent_message([new_text_part(question)]))
        return
    await updater.add_artifact([new_text_part(f"deployed {service} to {context.get_user_input()}")])
    await updater.complete()


async def release(updater: TaskUpdater, context: RequestContext, first: bool, asked: str) -> None:
    if first:
        parts = [new_text_part("Details of the release?"), new_data_part(RELEASE_FORM)]
        await updater.requires_input(updater.new_agent_message(parts))
        return
    assert context.message is not None
    (values,) = get_data_parts(context.message.parts)
    await updater.add_artifact([new_data_part({"released": values})])
    await updater.complete()


async def login(updater: TaskUpdater, context: RequestContext, first: bool, asked: str) -> None:
    if first:
        parts = [new_text_part("Sign in to the deploy service"), new_url_part(LOGIN_URL)]
        await updater.requires_auth(updater.new_agent_message(parts))
        return
    await updater.add_artifact([new_text_part("signed in")])
    await updater.complete()


async def broken(updater: TaskUpdater, context: RequestContext, first: bool, asked: str) -> None:
    await updater.failed(updater.new_agent_message([new_text_part("the cluster is down")]))


async def refuse(updater: TaskUpdater, context: RequestContext, first: bool, asked: str) -> None:
    await updater.reject(updater.new_agent_message([new_text_part("not allowed on production")]))


STEPS = {"deploy": deploy, "release": release, "login": login, "break": broken, "refuse": refuse}


class BearerOnly:
    """Refuses a call without the agent's token (the AgentCard is public)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/.well-known/"):
            request = Request(scope)
            if request.headers.get("authorization") != f"Bearer {TOKEN}":
                await Response("unauthorized", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


def card_for(url: str, *, streaming: bool) -> AgentCard:
    return AgentCard(
        name="deployer",
        description="Deploys services",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(id=s, name=s.title(), description=f"The {s} skill", tags=["ops"])
            for s in SKILLS
        ],
    )


@asynccontextmanager
async def a2a_agent(*, streaming: bool = True) -> AsyncIterator[tuple[str, Heard]]:
    """The agent served on a free port of 127.0.0.1: (its URL, what it heard)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}/"
    heard = Heard()
    card = card_for(url, streaming=streaming)
    handler = DefaultRequestHandler(
        agent_executor=Deployer(heard), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, "/")])
    config = uvicorn.Config(BearerOnly(app), log_level="warning", lifespan="off", ws="none")
    server = uvicorn.Server(config)
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        async with asyncio.timeout(10):
            while not server.started:  # noqa: ASYNC110  (uvicorn has no event for it)
                await asyncio.sleep(0.01)
        yield url, heard
    finally:
        server.should_exit = True
        await serving
        sock.close()
