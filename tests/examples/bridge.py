"""The bridge the examples' tests ask: the real service (`Server.start`, as `hitl-bridge serve`
runs it) with the fake Slack and the fake Anthropic API on 127.0.0.1, a token of its own, and
a "person" who answers each request in Slack as it is posted: `Answer` clicks Approve (or, for
a question, fills the Answer modal), `Decline` clicks Decline and gives the reason, `Edit`
changes a tool call's arguments in the Edit modal (the approval gate's, `approveToolCall`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import tempfile
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp

from adapters.serve.service import Server
from adapters.serve.settings import Settings
from bot.doors.tokens import Tokens
from bot.records import RequestRecord
from bot.store import upgrade
from bot.store.doors import DoorTables
from tests.fakes.anthropic_api import FakeAnthropic
from tests.fakes.slack_api import FakeSlack
from tests.fakes.slack_signing import block_actions_payload, post_signed, view_submission_payload

PERSON = "U0123ABCD"
TO = f"slack:{PERSON}"
SECRET = "examples-signing-secret"
WAIT = 10.0


@dataclass(frozen=True)
class Answer:
    """The person answers: {"answer": text} for a question, {"approved": true} approves."""

    answer: dict[str, Any]


@dataclass(frozen=True)
class Decline:
    """The person declines, saying why."""

    reason: str


@dataclass(frozen=True)
class Edit:
    """The person edits a tool call (approveToolCall) before approving it: `changes` are the
    fields they retype, the others are submitted as shown."""

    changes: dict[str, Any]


@dataclass(frozen=True)
class Asked:
    """A request the bridge was asked, as stored."""

    tool: str
    arguments: dict[str, Any]
    to: str


Person = Callable[[Asked], Answer | Decline | Edit]


@dataclass
class Bridge:
    url: str
    token: str
    asked: list[Asked] = field(default_factory=list)  # every request made, in order


@contextlib.asynccontextmanager
async def bridge(person: Person, *, at_once: int = 1) -> AsyncIterator[Bridge]:
    """The service on 127.0.0.1, and `person` answering its requests in Slack. With `at_once`
    the person answers nothing before that many requests are posted: what asks one request
    at a time, waiting for each answer, never gets one."""
    async with contextlib.AsyncExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        slack = await stack.enter_async_context(FakeSlack(users={PERSON: "person"}))
        model = await stack.enter_async_context(FakeAnthropic())
        http = await stack.enter_async_context(aiohttp.ClientSession())
        url = f"sqlite+aiosqlite:///{folder / 'hitl.db'}"
        await upgrade(url)
        server = await Server.start(Settings(
            _env_file=None, HITL_DATABASE_URL=url, HITL_HOST="127.0.0.1", HITL_PORT=0,
            SLACK_BOT_TOKEN=slack.token, SLACK_SIGNING_SECRET=SECRET,
            SLACK_API_URL=slack.base_url, ANTHROPIC_API_KEY="test",
            ANTHROPIC_BASE_URL=model.base_url, HITL_MODEL="claude-sonnet-4-6",
        ))  # fmt: skip
        stack.push_async_callback(server.stop)
        token, _ = await Tokens(DoorTables(server.service.store)).create("examples")
        made = Bridge(server.url, token)
        answering = asyncio.create_task(_answer(made, person, server, slack, http, at_once))
        try:
            yield made
        finally:
            answering.cancel()
            await asyncio.gather(answering, return_exceptions=True)


async def _answer(
    made: Bridge, person: Person, server: Server, slack: FakeSlack, http: aiohttp.ClientSession,
    at_once: int,
) -> None:  # fmt: skip
    """Answer each request message as it is posted (in order)."""
    events = f"{server.url}/slack/events"
    answered = 0
    while True:
        posts = await slack.wait_for_call(
            "chat.postMessage", max(answered + 1, at_once), timeout=3600
        )
        record = await _record(server, posts[answered])
        answered += 1
        asked = Asked(record.tool_name, record.arguments, TO)
        made.asked.append(asked)
        ref = record.message_refs["slack"]
        message = slack.message(ref["channel"], ref["ts"])
        await _reply(slack, http, events, message, ref["channel"], asked, person(asked))


async def _reply(
    slack: FakeSlack, http: aiohttp.ClientSession, events: str, message: dict[str, Any],
    channel: str, asked: Asked, reply: Answer | Decline | Edit,
) -> None:  # fmt: skip
    """The person's answer, as clicks (and a modal) on the request's message."""

    async def click(action: str) -> None:
        trigger = slack.new_trigger_id()
        payload = block_actions_payload(
            message=message, channel_id=channel, action_id=action, user_id=PERSON,
            trigger_id=trigger,
        )  # fmt: skip
        await post_signed(http, events, payload, SECRET)

    async def submit(values: dict[str, dict[str, Any]]) -> None:
        await slack.wait_for(lambda: slack.views, WAIT)
        view = list(slack.views.values())[-1]
        payload = view_submission_payload(view=view, user_id=PERSON, values=values)
        await post_signed(http, events, payload, SECRET)
        slack.views.clear()

    if isinstance(reply, Decline):
        await click("hitl_decline")
        await submit({"reason": {"reason": reply.reason}})
    elif isinstance(reply, Edit):
        await click("hitl_edit")
        shown: dict[str, Any] = asked.arguments["arguments"]  # the gate's call, as shown
        typed = {name: str(value) for name, value in (shown | reply.changes).items()}
        await submit({name: {name: value} for name, value in typed.items()})
    elif "answer" in reply.answer:
        await click("hitl_answer")
        await submit({"answer": {"answer": reply.answer["answer"]}})
    elif reply.answer.get("grant"):  # "Approve and allow", where the request offers it
        await click("hitl_grant")
    else:
        await click("hitl_approve" if reply.answer.get("approved") else "hitl_decline")


async def _record(server: Server, post: dict[str, Any]) -> RequestRecord:
    """The request a posted message shows (its buttons carry the id), once its ref is stored."""
    blocks = json.loads(post["blocks"]) if isinstance(post["blocks"], str) else post["blocks"]
    request_id = next(
        str(b["block_id"]).removeprefix("hitl_actions:") for b in blocks if b["type"] == "actions"
    )
    for _ in range(int(WAIT / 0.01)):
        record = await server.service.store.get_request(request_id)
        if record is not None and "slack" in record.message_refs:
            return record
        await asyncio.sleep(0.01)
    raise AssertionError(f"request {request_id} was never posted")
