"""`POST /ag-ui`: the bridge's agent over AG-UI (docs/api-and-mcp.md#ag-ui).

A run authenticates first (a door token, 401 otherwise), then reads its `RunAgentInput`
(400 with one line if it is not one), then streams AG-UI events over SSE: RUN_STARTED, the
model's text messages, its tool calls and their results (each call a step, STEP_STARTED to
STEP_FINISHED, named after its tool: events.ToolCallSteps), and RUN_FINISHED; a human tool's
request ends the run with an interrupt outcome, and the next run on the thread resumes it by
its id. Failures after the stream started are one RUN_ERROR, never a traceback. The turn
itself outlives a run: see adapters/doors/ag_ui/threads.py for why, and for how long a thread
nobody reads is kept. A token runs at most `turns_per_token` turns at once on a worker
(HITL_AG_UI_TURNS_PER_TOKEN): each holds a model call or a person's request, and its thread.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Protocol

from ag_ui.core import BaseEvent, Interrupt, ResumeEntry, RunAgentInput, UserMessage
from ag_ui.encoder import EventEncoder
from aiohttp import web
from pydantic import ValidationError

from adapters.doors.ag_ui import events
from adapters.doors.ag_ui.answers import strict_errors
from adapters.doors.ag_ui.replies import StreamedReplies
from adapters.doors.ag_ui.threads import (
    PREFIX,
    UNAVAILABLE,
    AgUiThread,
    Item,
    RequestAsked,
    Threads,
    TurnEnded,
)
from adapters.serve.http_limits import LOG_EVERY, BodyTooLarge, Throttled, read_body, too_deep
from bot import AIChannel
from bot.agent.hooks import HookTrigger
from bot.bridge.root import Bridge
from bot.doors.long_polls import LongPolls, TooManyPolls
from bot.doors.tokens import Tokens, bearer
from bot.human_tools.tool import HumanTool
from bot.records import Origin, RequestRecord, RequestStatus, StoreUnavailableError
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Invalid, Refusal, Refused, Router
from bot.tools.context import asked_through

log = logging.getLogger(__name__)

PATH = "/ag-ui"
SURFACE = "ag-ui"  # what the audit log names as the surface of an answer given here
DOOR = SURFACE  # and as the door of a request its run asked
MAX_BODY = 1024 * 1024  # bytes: a client sends the whole conversation with every run
MAX_DEPTH = 40
GONE_EVERY = 5.0  # seconds between checks that the client is still there while a turn works


class OpenRequests(Protocol):
    """What the door reads of the store: a thread's open requests (its interrupts)."""

    async def pending_in_room(self, room_id: str) -> list[RequestRecord]: ...


class BadInput(ValueError):
    """A body that is not a RunAgentInput: one line for the client."""


class AgUiDoor:
    """The AG-UI route (see the module's docstring) over the bridge's one agent channel."""

    def __init__(
        self,
        threads: Threads,
        channel: AIChannel,
        router: Router,
        store: OpenRequests,
        tokens: Tokens,
        polls: LongPolls,
        tools: Mapping[str, HumanTool],
        turns_per_token: int,
    ) -> None:
        self.threads, self.channel, self.router, self.store = threads, channel, router, store
        self.tokens, self.polls, self.tools = tokens, polls, tools
        self.turns_per_token = turns_per_token
        self.encoder = EventEncoder()
        self._refusals = Throttled(log, LOG_EVERY)

    def mount(self, app: web.Application) -> None:
        app.router.add_post(PATH, self.run)

    async def close(self) -> None:
        await self.threads.close()

    async def run(self, request: web.Request) -> web.StreamResponse:
        presented = bearer(request.headers.get("Authorization"))
        try:
            token = await self.tokens.check(presented) if presented is not None else None
        except StoreUnavailableError:
            return _error("the bridge cannot reach its database now", 503)
        if token is None:
            self._refusals.log("AG-UI: refused a run without a valid token")
            return _error("a valid bearer token is needed", 401)
        try:
            run = await _input(request)
        except BodyTooLarge:
            return _error(f"the body is over {MAX_BODY} bytes", 413)
        except BadInput as err:
            return _error(str(err), 400)
        try:
            hold = self.polls.hold(token.name, f"{PREFIX}{run.run_id}")
        except TooManyPolls as err:
            refused = _error(str(err), 429)
            refused.headers["Retry-After"] = str(err.retry_after)
            return refused
        with hold:
            response = web.StreamResponse(headers={"Content-Type": self.encoder.get_content_type(),
                                                   "Cache-Control": "no-cache"})  # fmt: skip
            await response.prepare(request)
            async for event in self._events(token.name, run, request):
                await response.write(self.encoder.encode(event).encode())
            await response.write_eof()
        return response

    async def _events(
        self, requester: str, run: RunAgentInput, request: web.Request
    ) -> AsyncIterator[BaseEvent]:
        thread_id, run_id = run.thread_id, run.run_id
        room = f"{PREFIX}{requester}:{thread_id}"
        yield events.run_started(thread_id, run_id)
        try:
            if run.resume:
                refused = await self._resume(room, requester, run.resume)
                if refused is not None:
                    yield refused
                    return
                still_open = await self._open(room)
                if still_open:
                    yield events.run_interrupted(thread_id, run_id, still_open)
                    return
            else:
                refused = self._begin(room, requester, run)
                if refused is not None:
                    yield refused
                    return
            async for event in self._stream(room, run, request):
                yield event
        except StoreUnavailableError as err:
            log.warning("AG-UI: the store is unavailable: %s", err)
            yield events.run_error(UNAVAILABLE, "unavailable")

    def _begin(self, room: str, requester: str, run: RunAgentInput) -> BaseEvent | None:
        """Start the thread's turn with the run's last user message; RUN_ERROR if it cannot
        (and nothing is kept of the thread then)."""
        thread = self.threads.get(room)
        if thread is not None and thread.running:
            return events.run_error(
                "this thread's turn is still running: resume its interrupts, or start "
                "another thread", "thread_busy")  # fmt: skip
        text = _last_user_text(run)
        if not text:
            return events.run_error("the run has no user message to answer", "no_message")
        if self.threads.turns_of(requester) >= self.turns_per_token:
            return events.run_error(
                f"this token already runs {self.turns_per_token} agent turns on this worker "
                "(HITL_AG_UI_TURNS_PER_TOKEN): answer or cancel their interrupts, or wait for "
                "one to end", "too_many_turns")  # fmt: skip
        if thread is not None:
            while not thread.queue.empty():  # what a run left unread (its client went away)
                thread.queue.get_nowait()

        replies = StreamedReplies(lambda event: self.threads.put(room, event))

        async def on_text(said: str) -> None:
            self.threads.put(room, *replies.said(said))

        async def turn_streamed() -> str:
            try:
                return await self.channel.respond(
                    room, text, actor_id=_actor(requester), on_text=on_text, steps=replies
                )
            finally:
                replies.end()  # a turn cut mid-reply leaves no message open

        turn = turn_streamed()
        with asked_through(Origin(DOOR, requester)):  # the turn's task copies it: its requests
            self.threads.start(room, turn, owner=requester)
        return None

    async def _stream(
        self, room: str, run: RunAgentInput, request: web.Request
    ) -> AsyncIterator[BaseEvent]:
        """The thread's events until its turn ends or asks a person (then the interrupt)."""
        with self.threads.reading(room) as thread:  # not dropped while this run reads it
            async for event in self._read(room, thread, run, request):
                yield event

    async def _read(
        self, room: str, thread: AgUiThread, run: RunAgentInput, request: web.Request
    ) -> AsyncIterator[BaseEvent]:
        steps = events.ToolCallSteps()
        getter: asyncio.Future[Item] | None = None  # kept across checks: no item is lost
        try:
            while True:
                if getter is None:
                    if thread.queue.empty() and not thread.running:  # nothing waits here
                        self.threads.forget(room)
                        for event in steps.close():
                            yield event
                        yield events.run_finished(run.thread_id, run.run_id)
                        return
                    getter = asyncio.ensure_future(thread.queue.get())
                done, _ = await asyncio.wait({getter}, timeout=GONE_EVERY)
                if not done:
                    if _gone(request):
                        return  # the turn goes on; the next run on the thread reads the rest
                    continue
                item, getter = getter.result(), None
                if isinstance(item, TurnEnded):
                    self.threads.forget(room, ended=True)
                    for event in [*steps.close(), self._ended(run, item)]:
                        yield event
                    return
                if isinstance(item, RequestAsked):
                    interrupts = await self._open(room)
                    if interrupts:
                        for event in steps.close():
                            yield event
                        yield events.run_interrupted(run.thread_id, run.run_id, interrupts)
                        return
                    continue  # answered already (elsewhere): the turn goes on
                for event in steps.of(item):
                    yield event
        finally:
            if getter is not None:
                getter.cancel()

    @staticmethod
    def _ended(run: RunAgentInput, ended: TurnEnded) -> BaseEvent:
        if ended.error is not None:
            return events.run_error(ended.error, "turn_failed")
        return events.run_finished(run.thread_id, run.run_id, ended.text or None)

    async def _open(self, room: str) -> list[Interrupt]:
        """The thread's open requests, as interrupts, oldest first."""
        found = await self.store.pending_in_room(room)
        mine = sorted((r for r in found if r.room_id == room), key=lambda r: r.created_at)
        return [events.interrupt(r, self.tools) for r in mine]

    async def _resume(
        self, room: str, requester: str, entries: list[ResumeEntry]
    ) -> BaseEvent | None:
        """Settle each answered interrupt through the router, in order; RUN_ERROR for the
        first that cannot be (it and those after it stay open)."""
        for entry in entries:
            record = await self.router.load(entry.interrupt_id)
            if record is None or record.room_id != room:
                shown = entry.interrupt_id[:60]
                return events.run_error(f"no interrupt {shown} in this thread", "unknown_interrupt")
            refused = await self._settle(record, requester, entry)
            if refused is not None:
                return refused
        return None

    async def _settle(
        self, record: RequestRecord, requester: str, entry: ResumeEntry
    ) -> BaseEvent | None:
        who = Interaction(record.id, _actor(requester), Verb.SUBMIT, surface=SURFACE,
                          name=requester)  # fmt: skip
        if entry.status == "cancelled":
            decline = Interaction(record.id, who.user_id, Verb.DECLINE, {"reason": _reason(entry)},
                                  surface=SURFACE, name=requester)  # fmt: skip
            outcome = await self.router.handle(decline, record)
        else:
            payload = entry.payload
            answer = payload if isinstance(payload, str) else json.dumps(payload)
            wrong = strict_errors(record, self.tools, answer) if _open_now(record) else {}
            if wrong:  # nothing settled: the client may resume again
                return _invalid(record, wrong)
            outcome = await self.router.submit_answer(who, answer)
        if isinstance(outcome, Invalid):
            return _invalid(record, outcome.errors)
        if isinstance(outcome, Refused) and outcome.reason is not Refusal.SETTLED:
            # Settled already (answered elsewhere first) is no error: the turn has its answer.
            return events.run_error(outcome.notice.plain, f"refused_{outcome.reason.value}")
        return None


def open_ag_ui(
    bridge: Bridge,
    channel: AIChannel,
    router: Router,
    store: OpenRequests,
    tokens: Tokens,
    polls: LongPolls,
    tools: Mapping[str, HumanTool],
    turns_per_token: int,
) -> AgUiDoor:
    """The AG-UI door on the bridge's agent channel: its rooms attached as a surface, its
    tool calls heard through the hooks (the last BEFORE_TOOL_USE: the call as it runs)."""
    threads = Threads()
    bridge.attach(threads)
    bridge.hooks.register(HookTrigger.BEFORE_TOOL_USE, threads.before_tool, priority=1_000_000,
                          name="ag-ui")  # fmt: skip
    bridge.hooks.register(HookTrigger.ON_TOOL_CALL, threads.after_tool, name="ag-ui")
    return AgUiDoor(threads, channel, router, store, tokens, polls, tools, turns_per_token)


async def _input(request: web.Request) -> RunAgentInput:
    raw = await read_body(request, MAX_BODY)
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):
        raise BadInput("the body is not JSON") from None
    if too_deep(value, MAX_DEPTH):
        raise BadInput(f"the body nests deeper than {MAX_DEPTH}")
    try:
        return RunAgentInput.model_validate(value)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise BadInput(f"not a RunAgentInput: {where}: {first['msg']}") from None


def _last_user_text(run: RunAgentInput) -> str:
    """The text of the run's last user message (the bridge keeps the thread's transcript
    itself: the messages before it are the client's copy)."""
    for message in reversed(run.messages):
        if isinstance(message, UserMessage):
            content = message.content
            if isinstance(content, str):
                return content.strip()
            texts = [getattr(part, "text", "") for part in content]
            return "\n".join(t for t in texts if isinstance(t, str) and t).strip()
    return ""


def _open_now(record: RequestRecord) -> bool:
    """Whether the request is still to be answered (settled elsewhere first, whatever the
    resume says is no error: the run streams that answer)."""
    return record.status is RequestStatus.PENDING


def _invalid(record: RequestRecord, errors: Mapping[str, str]) -> BaseEvent:
    listed = "; ".join(f"{key or 'answer'}: {problem}" for key, problem in errors.items())
    return events.run_error(f"the answer to {record.id} was refused: {listed}", "invalid_answer")


def _reason(entry: ResumeEntry) -> str:
    """A cancelled interrupt's reason: the payload's `reason`, or the payload as text."""
    payload = entry.payload
    if isinstance(payload, dict):
        payload = payload.get("reason")
    return payload if isinstance(payload, str) else ""


def _actor(requester: str) -> str:
    """The web user of a token: the actor of its threads' turns, who may answer them."""
    return f"{PREFIX}{requester}"


def _gone(request: web.Request) -> bool:
    transport = request.transport
    return transport is None or transport.is_closing()


def _error(message: str, status: int) -> web.Response:
    return web.json_response({"error": message}, status=status)
