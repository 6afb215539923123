"""Real `hitl-bridge serve` worker processes around the fakes, for durability tests and benches.

Each worker is `python -m adapters.cli.command serve` (the production entry point) in its own
process,
configured only by environment variables, on a database the test prepared (a SQLite file, or a
fresh PostgreSQL database of its own). The fakes run in the test's process on 127.0.0.1: one
FakeSlack, one FakeBotConnector (Teams, for workers started with
HITL_TEAMS_ALLOW_UNAUTHENTICATED=1) and one FakeAnthropic shared by every worker, as one
workspace and one model would be. A worker can be killed (SIGKILL: nothing runs after it) or
stopped (SIGTERM) at any point, and started again on the same database.

Which worker did what: each worker gets its own ANTHROPIC_API_KEY (`key-<name>`), so every
request the model receives says where it came from; a run's owner in the store names the
worker's pid. Every wait is bounded; teardown kills what is still running.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import json
import os
import re
import secrets
import signal
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, TypeVar, overload

import aiohttp
from sqlalchemy import select, text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import create_async_engine
from sqlalchemy.pool import NullPool

from bot.records import RequestRecord, RequestStatus
from bot.store import SqlStore, upgrade
from bot.store.engine import async_url
from bot.store.schema import RunRow
from tests.fakes.anthropic_api import FakeAnthropic, RecordedRequest
from tests.fakes.bot_connector import FakeBotConnector
from tests.fakes.slack_api import BOT_USER_ID, FakeSlack
from tests.fakes.slack_signing import (
    block_actions_payload,
    event_callback,
    message_event,
    post_signed,
)

ROOT = Path(__file__).resolve().parents[2]
POSTGRES_URL_ENV = "HITL_TEST_POSTGRES_URL"
SECRET = "durability-signing-secret"
MODEL = "claude-sonnet-4-6"  # not deprecated: the SDK would warn otherwise
CHANNEL = "C0DURABLE1"
ALICE = "U0ALICE001"
STRANGER = "U0MALLORY1"
# Runs a worker that acks each click, then stalls before handling it (stalled_worker.py).
STALLS_AFTER_ACK = "tests.adapters.stalled_worker"
START_TIMEOUT = 60.0  # a worker imports for ~3 s; only a broken start reaches this
WAIT = 20.0  # upper bound for anything a test awaits; only a broken test ever reaches it
POLL = 0.02

JSON = dict[str, Any]
T = TypeVar("T")

_SERVING = re.compile(r"hitl-bridge serving on (http://\S+)")
# What the Teams SDK would read from the environment besides our settings (without
# TEAMS_CLIENT_ID it falls back to CLIENT_ID & co.): never passed on to a worker.
SDK_VARIABLES = ("CLIENT_ID", "CLIENT_SECRET", "TENANT_ID", "MANAGED_IDENTITY_CLIENT_ID",
                 "CLOUD", "SERVICE_URL", "DANGEROUSLY_ALLOW_UNAUTHENTICATED_REQUESTS")  # fmt: skip


def has_actions(message: Mapping[str, Any]) -> bool:
    """Whether a Slack message still shows interactive elements (live buttons)."""
    return any(block.get("type") == "actions" for block in message.get("blocks") or [])


def request_id_of(message: Mapping[str, Any]) -> str:
    """The request a live message's buttons point at."""
    return next(
        str(block["block_id"]).removeprefix("hitl_actions:")
        for block in message.get("blocks") or []
        if block.get("type") == "actions"
    )


@overload
async def eventually(
    check: Callable[[], Awaitable[T | None]], what: str, timeout: float = WAIT
) -> T: ...
@overload
async def eventually(check: Callable[[], T | None], what: str, timeout: float = WAIT) -> T: ...
async def eventually(
    check: Callable[[], Awaitable[T | None] | T | None], what: str, timeout: float = WAIT
) -> T:
    """Poll `check` until it returns something truthy (for state no fake announces: the
    database, the model's recorded requests); TimeoutError naming `what` otherwise."""
    deadline = time.monotonic() + timeout
    while True:
        outcome = check()
        found = await outcome if inspect.isawaitable(outcome) else outcome
        if found:
            return found
        if time.monotonic() >= deadline:
            raise TimeoutError(f"not within {timeout}s: {what}")
        await asyncio.sleep(POLL)


# -- databases ---------------------------------------------------------------------------------


async def _admin(server_url: str, statement: str) -> None:
    engine = create_async_engine(
        async_url(server_url), poolclass=NullPool, isolation_level="AUTOCOMMIT"
    )
    try:
        async with engine.connect() as conn:
            await conn.execute(text(statement))
    finally:
        await engine.dispose()


@contextlib.asynccontextmanager
async def postgres_database(server_url: str) -> AsyncIterator[str]:
    """A fresh database on the server of `server_url` (NOTIFY is per database, so workers of
    other tests cannot hear each other), dropped afterwards; yields its URL."""
    name = f"hitl_t_{secrets.token_hex(6)}"
    await _admin(server_url, f'CREATE DATABASE "{name}"')
    try:
        yield make_url(server_url).set(database=name).render_as_string(hide_password=False)
    finally:
        # FORCE: connections of killed workers may not have been noticed as gone yet.
        await _admin(server_url, f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# -- workers -----------------------------------------------------------------------------------


@dataclass
class Worker:
    """One `hitl-bridge serve` process."""

    name: str
    process: asyncio.subprocess.Process
    url: str
    log_path: Path

    @property
    def pid(self) -> int:
        return self.process.pid

    @property
    def api_key(self) -> str:
        return api_key(self.name)

    @property
    def events_url(self) -> str:
        return f"{self.url}/slack/events"

    @property
    def messages_url(self) -> str:
        """Teams' endpoint (served when the worker runs Teams)."""
        return f"{self.url}/api/messages"

    @property
    def alive(self) -> bool:
        return self.process.returncode is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


def api_key(worker_name: str) -> str:
    return f"key-{worker_name}"


def sent_by(request: RecordedRequest) -> str:
    """The name of the worker that sent a request to the model."""
    bearer = request.headers.get("authorization", "").removeprefix("Bearer ")
    return (request.headers.get("x-api-key") or bearer).strip().removeprefix("key-")


def tool_results_for(model: FakeAnthropic, tool_use_id: str) -> list[tuple[int, JSON]]:
    """(index, block) of each request whose last message carries the result of `tool_use_id`:
    each time the model was handed that result as new (later requests repeat it as history)."""
    return [
        (i, block)
        for i, request in enumerate(model.requests)
        for block in request.tool_results
        if block.get("tool_use_id") == tool_use_id
    ]


@dataclass
class Thread:
    """A conversation started by a mention: the root message's ts is the room."""

    cluster: Cluster
    ts: str

    @property
    def room_id(self) -> str:
        return f"slack:{CHANNEL}:{self.ts}"

    def bot_messages(self) -> list[JSON]:
        slack = self.cluster.slack
        return [
            m
            for m in slack.thread(CHANNEL, self.ts)
            if m.get("user") == BOT_USER_ID and m["ts"] != self.ts
        ]

    def streamed(self, message: Mapping[str, Any]) -> bool:
        """Whether a message is a streamed reply (chat.startStream), open or stopped."""
        return self.cluster.slack.streaming(CHANNEL, message["ts"]) is not None

    def texts(self) -> list[str]:
        """The bot's replies in the thread, oldest first: plain messages (no blocks), and
        streamed replies once their stream stopped."""
        slack = self.cluster.slack
        return [
            m["text"]
            for m in self.bot_messages()
            if slack.streaming(CHANNEL, m["ts"]) is False or not m.get("blocks")
        ]

    async def request(self, n: int = 1) -> JSON:
        """The `n`-th request message as it was while executing (from its edit history)."""
        slack = self.cluster.slack

        def executing() -> JSON:
            found = []
            for message in self.bot_messages():
                if self.streamed(message):  # a reply (its Stop button), not a request
                    continue
                live = [v for v in slack.edits(CHANNEL, message["ts"]) if has_actions(v)]
                if live:
                    found.append(live[-1])
            return found[n - 1] if len(found) >= n else {}

        return await slack.wait_for(executing, WAIT)

    async def posted(self, n: int = 1) -> tuple[JSON, RequestRecord]:
        """The `n`-th request once it is fully posted: live in Slack, and its message recorded
        in the store (what a worker that did not post it needs to edit it)."""
        message = await self.request(n)
        request_id = request_id_of(message)

        async def recorded() -> RequestRecord | None:
            record = await self.cluster.store.get_request(request_id)
            return record if record is not None and "slack" in record.message_refs else None

        return message, await eventually(recorded, f"the message of {request_id} recorded")

    async def settled(self, message: Mapping[str, Any], marker: str) -> JSON:
        """The message once edited to a state without controls that says `marker`."""
        slack = self.cluster.slack

        def done() -> JSON:
            current = slack.message(CHANNEL, message["ts"])
            return {} if has_actions(current) or marker not in json.dumps(current) else current

        return await slack.wait_for(done, WAIT)

    async def reply(self, text: str) -> None:
        """Wait until the bot has posted `text` in the thread."""
        await self.cluster.slack.wait_for(lambda: text in self.texts(), WAIT)

    def versions(self, message: Mapping[str, Any]) -> list[JSON]:
        """Every version of a message: as posted, then after each edit."""
        return self.cluster.slack.edits(CHANNEL, message["ts"])


@dataclass
class Cluster:
    """The fakes, one database, and the worker processes serving them."""

    db_url: str
    folder: Path
    slack: FakeSlack
    model: FakeAnthropic
    http: aiohttp.ClientSession
    store: SqlStore  # the test's own view of the shared database
    connector: FakeBotConnector
    workers: list[Worker] = field(default_factory=list)
    _logs: list[IO[bytes]] = field(default_factory=list)

    async def start_worker(
        self, name: str, *, module: str = "adapters.cli.command", **settings: Any
    ) -> Worker:
        """Start `hitl-bridge serve`; returns once /healthz answers 200. `settings` are
        environment variables (HITL_LEASE_SECONDS=1 and HITL_TIMEOUT_SECONDS=60 unless given;
        HITL_TEAMS_ALLOW_UNAUTHENTICATED=1 serves Teams too). `module` is what runs `serve`:
        the CLI, or a variant of it from the tests (STALLS_AFTER_ACK)."""
        worker = await self.spawn(name, module=module, **settings)
        process = worker.process

        async def serving() -> str | None:
            if process.returncode is not None:
                raise RuntimeError(
                    f"worker {name} exited with {process.returncode}:\n{worker.log()}"
                )
            found = _SERVING.search(worker.log())
            return found.group(1) if found else None

        worker.url = await eventually(serving, f"worker {name} serving", START_TIMEOUT)

        async def healthy() -> bool:
            with contextlib.suppress(aiohttp.ClientError):
                async with self.http.get(f"{worker.url}/healthz") as response:
                    return response.status == 200
            return False

        await eventually(healthy, f"worker {name} healthy", START_TIMEOUT)
        return worker

    async def spawn(
        self, name: str, *, module: str = "adapters.cli.command", **settings: Any
    ) -> Worker:
        """`hitl-bridge serve` started, not waited for (see `start_worker`): its `url` is ""
        until it says where it serves; for a start that is to fail, `await process.wait()`."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("HITL_", "SLACK_", "ANTHROPIC_", "TEAMS_"))
            and k not in SDK_VARIABLES
        }
        env |= {
            "PYTHONUNBUFFERED": "1",
            "HITL_DATABASE_URL": self.db_url,
            "HITL_HOST": "127.0.0.1",
            "HITL_PORT": "0",  # the kernel picks a free port; the worker logs which
            "HITL_MODEL": MODEL,
            "HITL_LEASE_SECONDS": "1",
            "HITL_TIMEOUT_SECONDS": "60",
            "SLACK_BOT_TOKEN": self.slack.token,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": self.slack.base_url,
            "ANTHROPIC_API_KEY": api_key(name),
            "ANTHROPIC_BASE_URL": self.model.base_url,
        }
        env |= {key: str(value) for key, value in settings.items()}
        # This checkout's code, whatever the interpreter has installed (an editable install of
        # another checkout, say), and the tests' own modules (STALLS_AFTER_ACK).
        env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(ROOT), env.get("PYTHONPATH"))))
        log_path = self.folder / f"worker-{name}-{len(self.workers)}.log"
        log = log_path.open("wb")
        self._logs.append(log)
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", module, "serve",
            cwd=self.folder, env=env, stdin=asyncio.subprocess.DEVNULL, stdout=log, stderr=log,
        )  # fmt: skip
        worker = Worker(name, process, "", log_path)
        self.workers.append(worker)
        return worker

    async def kill(self, worker: Worker) -> None:
        """SIGKILL: the worker stops between two instructions, nothing of it runs after."""
        if worker.alive:
            worker.process.send_signal(signal.SIGKILL)
        await worker.process.wait()

    async def terminate(self, worker: Worker, timeout: float) -> int:
        """SIGTERM (what an orchestrator sends), then wait up to `timeout` s for the exit."""
        worker.process.send_signal(signal.SIGTERM)
        async with asyncio.timeout(timeout):
            return await worker.process.wait()

    async def close(self) -> None:
        """Kill every worker still running, and show their logs (pytest prints them for a
        failing test)."""
        for worker in self.workers:
            await self.kill(worker)
        for log in self._logs:
            log.close()
        for worker in self.workers:
            print(f"---- worker {worker.name} (pid {worker.pid}) ----\n{worker.log()}")

    # -- Slack's side ----------------------------------------------------------------------

    async def post(self, worker: Worker, payload: Mapping[str, Any], **kwargs: Any) -> None:
        """Deliver a payload to `worker` as Slack does (signed), expecting the 200 ack."""
        response = await post_signed(self.http, worker.events_url, payload, SECRET, **kwargs)
        assert response.status == 200, await response.text()

    def mention_event(self, text: str, *, user: str = ALICE) -> tuple[JSON, str]:
        """A person's message mentioning the bot, stored in Slack; (event, its ts)."""
        full = f"<@{BOT_USER_ID}> {text}"
        root = self.slack.add_message(CHANNEL, full, user=user)
        event = message_event(
            full, user=user, channel=CHANNEL, ts=root["ts"], event_type="app_mention"
        )
        return event, root["ts"]

    async def mention(self, worker: Worker, text: str, *, user: str = ALICE) -> Thread:
        event, ts = self.mention_event(text, user=user)
        await self.post(worker, event_callback(event))
        return Thread(self, ts)

    def click_payload(
        self, message: Mapping[str, Any], action_id: str, *, user: str = ALICE
    ) -> JSON:
        return block_actions_payload(
            message=message,
            channel_id=CHANNEL,
            action_id=action_id,
            user_id=user,
            trigger_id=self.slack.new_trigger_id(),
            response_url=self.slack.new_response_url(CHANNEL, message["ts"]),
        )

    async def click(
        self, worker: Worker, message: Mapping[str, Any], action_id: str, *, user: str = ALICE
    ) -> None:
        await self.post(worker, self.click_payload(message, action_id, user=user))

    # -- Teams' side -------------------------------------------------------------------------

    async def post_activity(self, worker: Worker, activity: Mapping[str, Any]) -> Any:
        """Deliver an activity to `worker` as the Bot Framework does, expecting HTTP 200;
        returns the response's JSON body (an invoke's card), or None."""
        async with self.http.post(worker.messages_url, json=dict(activity)) as response:
            body = await response.text()
            assert response.status == 200, body
            return json.loads(body) if body else None

    # -- the store ---------------------------------------------------------------------------

    async def run_of(self, room_id: str) -> Any:
        """The room's run row (owner, lease, active), or None."""
        async with self.store.engine.connect() as conn:
            rows = await conn.execute(select(RunRow.__table__).where(RunRow.room_id == room_id))
            return rows.first()

    async def owned_by(self, room_id: str, worker: Worker) -> bool:
        """Whether `worker` holds the room's run now (a run's owner is host:pid:random)."""
        run = await self.run_of(room_id)
        return run is not None and run.active and f":{worker.pid}:" in (run.owner or "")

    async def finished(self, room_id: str) -> bool:
        """Whether the room's run has ended: nothing more will happen in it on its own."""
        run = await self.run_of(room_id)
        return run is not None and not run.active

    async def settle_actions(self, request_id: str) -> list[str]:
        """The audit's settle actions of a request (request.resolved, request.timed_out…)."""
        audit = await self.store.list_audit(request_id=request_id)
        return [e.action for e in audit if e.action not in ("request.created", "request.delivered")]


def pending(record: RequestRecord | None) -> bool:
    return record is not None and record.status is RequestStatus.PENDING


@contextlib.asynccontextmanager
async def cluster(db_url: str, folder: Path) -> AsyncIterator[Cluster]:
    """The fakes and a migrated database (`hitl-bridge db upgrade`), ready for workers;
    everything is killed and closed on exit."""
    await upgrade(db_url)
    store = SqlStore.from_url(db_url)
    try:
        async with (
            FakeSlack(users={ALICE: "alice", STRANGER: "mallory"}) as slack,
            FakeAnthropic() as model,
            FakeBotConnector() as connector,
            aiohttp.ClientSession() as http,
        ):
            running = Cluster(db_url, folder, slack, model, http, store, connector)
            try:
                yield running
            finally:
                await running.close()
    finally:
        await store.close()
