"""AG-UI threads: each one's agent turn, and what the turn said and did, queued for the runs
that stream it.

Why a queue outlives a run: AG-UI ends a run at an interrupt and continues in the next run
with `resume`, while the bridge's agent turn is one coroutine that waits inside the human
tool's call. So the turn keeps running (waiting on the request, in this worker, exactly as a
Slack turn does) after the first run's stream has ended; what it does next goes into its
thread's queue, and the resume run, having settled the request, streams the queue from where
the first stopped. An answer given elsewhere (a Slack copy) wakes the same wait, so the resume
then finds the continuation already queued.

The thread's words and tool calls come from the agent loop's own ports, whichever task runs
the turn (this door's, or a run resumed after a restart): the BEFORE_TOOL_USE and ON_TOOL_CALL
hooks, `on_text`, and the bridge's surface protocol (`observe` hears each request asked in an
AG-UI room, `say` a resumed run's words).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from ag_ui.core import BaseEvent

from adapters.ag_ui import events
from bot.agent.hooks import HookContext, HookResult, ToolCallEvent
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.human_input import RenderState, RequestUpdate
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

PREFIX = "ag-ui:"  # the rooms of AG-UI threads: ag-ui:<token name>:<threadId>
FAILED = "The agent's turn failed on the bridge's side."
UNAVAILABLE = "The bridge cannot reach its database now; try again shortly."


@dataclass(frozen=True, slots=True)
class RequestAsked:
    """A request was asked in the thread: the run streaming it ends with an interrupt."""

    request_id: str


@dataclass(frozen=True, slots=True)
class TurnEnded:
    """The turn ended: with the model's last words, or with `error` (one line)."""

    text: str = ""
    error: str | None = None


Item = BaseEvent | events.ToolResult | RequestAsked | TurnEnded


@dataclass
class AgUiThread:
    """One AG-UI thread's queue and, while one runs, its turn."""

    queue: asyncio.Queue[Item] = field(default_factory=asyncio.Queue)
    turn: asyncio.Task[None] | None = None
    calls: set[str] = field(default_factory=set)  # the tool calls whose start was streamed

    @property
    def running(self) -> bool:
        return self.turn is not None and not self.turn.done()


Respond = Callable[[str, str], Awaitable[str]]  # (room, text) -> the turn's words


class Threads:
    """Every AG-UI thread this worker has seen; also the bridge's surface for their rooms."""

    name = "ag-ui"
    room_prefix = PREFIX

    def __init__(self) -> None:
        self._threads: dict[str, AgUiThread] = {}

    def thread(self, room_id: str) -> AgUiThread:
        return self._threads.setdefault(room_id, AgUiThread())

    def forget(self, room_id: str, *, ended: bool = False) -> None:
        """Drop a thread whose turn ended and was read to its end (`ended`: its TurnEnded,
        the last thing its task does, was read): kept no longer than that."""
        thread = self._threads.get(room_id)
        if thread is not None and (ended or not thread.running) and thread.queue.empty():
            del self._threads[room_id]

    def put(self, room_id: str, *items: Item) -> None:
        queue = self.thread(room_id).queue
        for item in items:
            queue.put_nowait(item)

    def start(self, room_id: str, run: Awaitable[str]) -> None:
        """Run a turn in the background: it outlives the run that started it (see above)."""
        thread = self.thread(room_id)
        thread.turn = asyncio.create_task(self._turn(room_id, run))

    async def _turn(self, room_id: str, run: Awaitable[str]) -> None:
        try:
            text = await run
        except StoreUnavailableError as err:
            log.warning("AG-UI: the turn in %s could not reach the store: %s", room_id, err)
            self.put(room_id, TurnEnded(error=UNAVAILABLE))
        except Exception:
            log.exception("AG-UI: the turn in %s failed", room_id)
            self.put(room_id, TurnEnded(error=FAILED))
        else:
            self.put(room_id, TurnEnded(text=text))

    async def close(self) -> None:
        """Cut the turns still running (at shutdown: their requests stay pending)."""
        turns = [t.turn for t in self._threads.values() if t.turn is not None]
        for turn in turns:
            turn.cancel()
        await asyncio.gather(*turns, return_exceptions=True)

    # -- what the agent loop tells -----------------------------------------------------------

    async def text(self, room_id: str, text: str) -> None:
        """`on_text` of this door's turns."""
        self.put(room_id, *events.text_message(text))

    async def before_tool(self, event: ToolCallEvent, context: HookContext) -> HookResult | None:
        """BEFORE_TOOL_USE, registered last: the call as it will run."""
        if event.room_id.startswith(PREFIX):
            self._call(event)
        return None

    def _call(self, event: ToolCallEvent) -> None:
        calls = self.thread(event.room_id).calls
        if event.tool_call_id not in calls:
            calls.add(event.tool_call_id)
            self.put(event.room_id, *events.tool_call(event.tool_call_id, event.tool_name,
                                                       event.arguments))  # fmt: skip

    async def after_tool(self, event: ToolCallEvent, context: HookContext) -> HookResult | None:
        """ON_TOOL_CALL: what the model reads of the call."""
        if event.room_id.startswith(PREFIX) and not event.cancelled:
            self._call(event)  # a call an earlier hook blocked was never started
            self.thread(event.room_id).calls.discard(event.tool_call_id)
            result = events.ToolResult(event.tool_call_id, event.tool_name, event.result or "")
            self.put(event.room_id, result)
        return None

    # -- the bridge's surface protocol (bot/bridge/surfaces.py) ------------------------------

    async def observe(self, update: RequestUpdate) -> None:
        if update.state is RenderState.EXECUTING and not update.copy and not update.shown_again:
            self.put(update.room_id, RequestAsked(update.pending_id))

    async def say(self, room_id: str, text: str) -> None:
        await self.text(room_id, text)

    async def find(self, address: Address) -> Addressee:
        raise UnknownAddressError("an AG-UI thread is not an address: run the agent over AG-UI")
