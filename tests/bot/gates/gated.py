"""What the gate tests share: the team's tool (a Python function counting its runs), its
rules, and workers (a real handler on a real store each, with the gate and a router)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from bot.errors import ToolFailedError
from bot.gates.gate import approval_gate
from bot.gates.grants import Grants
from bot.human_input import HumanInputHandler, RenderState, RequestUpdate
from bot.requests.access import AnswerPolicy
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Router
from bot.store import SqlStore, open_store
from bot.tools import AITool, ToolHandler
from bot.tools.context import ToolCallContext, tool_turn_context
from tests.bot.store.conftest import Database

ACTOR, APPROVER, STRANGER = "U0ACTOR01", "U0APPROVE", "U0STRANGE"
ROOM = "slack:C0GENERAL01:1700000000.000100"
TOKEN = "s3cr3t-t0ken-value"
HOLD = 1.0  # seconds a silent holder keeps its requests (it beats every HOLD / 4)
WAIT = 10.0  # upper bound for anything awaited; only a broken test reaches it

DEPLOY = AITool(
    "deploy",
    "Deploy a service to an environment.",
    {
        "type": "object",
        "properties": {
            "service": {"type": "string", "pattern": "^[a-z-]+$"},
            "env": {"type": "string", "enum": ["staging", "production"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "token": {"type": "string"},
            "labels": {"type": "object"},
        },
        "required": ["service", "env", "token"],
    },
)
ECHO = AITool(
    "echo", "Say it back.", {"type": "object", "properties": {"text": {"type": "string"}}}
)
CALL = {"service": "api", "env": "production", "replicas": 2, "token": TOKEN}


@dataclass
class Deployer:
    """The team's tool: counts its runs; `env: broken` fails as a tool fails."""

    runs: list[dict[str, Any]] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event | None = None  # set: each run waits for it

    async def __call__(self, name: str, arguments: dict[str, Any]) -> str:
        self.runs.append(dict(arguments))
        self.started.set()
        if self.release is not None:
            await self.release.wait()
        if name == "echo":
            return str(arguments.get("text"))
        if arguments.get("env") == "broken":
            raise ToolFailedError("the deploy failed: no such environment")
        return json.dumps({"deployed": arguments["service"], "env": arguments["env"]})


@dataclass(frozen=True)
class Rule:
    needs_approval: bool = True
    redact: frozenset[str] = frozenset({"token"})
    grant_scope: frozenset[str] = frozenset()
    grant_seconds: float = 3600.0


@dataclass
class Rules:
    """`approval_for` as bot/tool_sources/setup.py's AgentTools gives it: deploy is gated."""

    rules: dict[str, Rule] = field(default_factory=lambda: {"deploy": Rule(), "echo": Rule(False)})

    def approval_for(self, name: str) -> Rule | None:
        return self.rules.get(name)


@dataclass
class Worker:
    """One worker: its handler and store, the gate in front of `tool`, a router, what its
    observers (the surfaces) were told."""

    handler: HumanInputHandler
    store: SqlStore
    gate: ToolHandler
    router: Router
    heard: list[RequestUpdate] = field(default_factory=list)
    changed: asyncio.Condition = field(default_factory=asyncio.Condition)
    stop_listening: Callable[[], Awaitable[None]] | None = None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)

    async def observe(self, update: RequestUpdate) -> None:
        async with self.changed:
            self.heard.append(update)
            self.changed.notify_all()

    async def seen(self, check: Callable[[list[RequestUpdate]], bool]) -> list[RequestUpdate]:
        async with asyncio.timeout(WAIT), self.changed:
            await self.changed.wait_for(lambda: check(self.heard))
            return list(self.heard)

    async def asked(self, count: int = 1) -> RequestUpdate:
        """The `count`-th approval request this worker showed."""
        heard = await self.seen(lambda h: len(executing(h)) >= count)
        return executing(heard)[count - 1]

    def call(
        self,
        arguments: dict[str, Any],
        *,
        call_id: str,
        resumed: bool = False,
        tool: str = "deploy",
        **context: Any,
    ) -> asyncio.Task[str]:
        """The model's call of `tool`, as the tool loop makes it, running as a task."""
        where = {"room_id": ROOM, "actor_id": ACTOR, "channel_id": "agent", **context}
        turn = ToolCallContext(tool_call_id=call_id, resumed=resumed, **where)

        async def run() -> str:
            with tool_turn_context(turn):
                return await self.gate(tool, arguments)

        task = asyncio.create_task(run())
        self.tasks.add(task)
        return task

    async def answer(self, request_id: str, verb: Verb, user: str = ACTOR, **inputs: Any) -> Any:
        interaction = Interaction(request_id, user, verb, inputs, surface="test")
        return await self.router.handle(interaction)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        if self.stop_listening is not None:
            await self.stop_listening()
        await asyncio.wait_for(self.handler.drain(), 5)
        await self.store.close()


def executing(updates: list[RequestUpdate]) -> list[RequestUpdate]:
    return [u for u in updates if u.state is RenderState.EXECUTING]


Clock = Callable[[], datetime]


async def start_worker(
    database: Database,
    name: str,
    tool: Deployer,
    *,
    rules: Rules | None = None,
    clock: Clock | None = None,
    migrate: bool = False,
) -> Worker:
    store = await open_store(database.url, migrate=migrate, schema=database.schema)
    handler = HumanInputHandler(store=store, hold_seconds=HOLD, worker_id=name)
    grants = Grants(store, clock=clock) if clock is not None else Grants(store)
    gate = approval_gate(handler, runs=store, grants=grants, timeout=WAIT * 2)
    router = Router(
        store=store,
        handler_for=lambda channel: handler,
        policy=AnswerPolicy(approvers=frozenset({APPROVER})),
    )
    worker = Worker(
        handler, store, gate(tool, {"deploy": DEPLOY, "echo": ECHO}, rules or Rules()), router
    )
    handler.add_observer(worker.observe)

    def heard(request_id: str) -> None:  # another worker's NOTIFY (PostgreSQL), as the bridge
        task = asyncio.create_task(handler.follow(request_id))
        worker.tasks.add(task)

    worker.stop_listening = await store.listen_settled(heard)
    return worker


async def within(awaitable: Awaitable[Any]) -> Any:
    async with asyncio.timeout(WAIT):
        return await awaitable


def everything_said(*values: Any) -> str:
    return json.dumps([repr(v) for v in values], ensure_ascii=False)
