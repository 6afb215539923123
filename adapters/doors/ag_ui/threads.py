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

Bounded memory: a thread is kept while a run reads it or its turn runs (the per-token cap on
turns bounds those, adapters/doors/ag_ui/door.py). Once neither (the turn ended, or a thread only
told of a turn running elsewhere), what nobody has read is kept `kept_for` seconds for a late
resume (an answer given in Slack first continues the turn before the client comes back), at
most `max_unread` such threads, the oldest dropped first; a thread with nothing queued goes at
once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

from ag_ui.core import BaseEvent

from adapters.doors.ag_ui import events
from bot.agent.hooks import HookContext, HookResult, ToolCallEvent
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.human_input import RenderState, RequestUpdate
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

PREFIX = "ag-ui:"  # the rooms of AG-UI threads: ag-ui:<token name>:<threadId>
FAILED = "The agent's turn failed on the bridge's side."
UNAVAILABLE = "The bridge cannot reach its database now; try again shortly."
KEPT_FOR = 600.0  # seconds an unread thread waits for a resume: an answer's round trip
MAX_UNREAD = 1000  # unread threads kept on a worker at most (each a few events)


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
    owner: str = ""  # the token whose turn runs here
    readers: int = 0  # the runs streaming it now

    @property
    def running(self) -> bool:
        return self.turn is not None and not self.turn.done()

    @property
    def idle(self) -> bool:
        """Nobody reads it and no turn of it runs here: it waits for a resume, or nothing."""
        return self.readers == 0 and not self.running


Respond = Callable[[str, str], Awaitable[str]]  # (room, text) -> the turn's words


class Threads:
    """Every AG-UI thread this worker has seen; also the bridge's surface for their rooms."""

    name = "ag-ui"
    room_prefix = PREFIX

    def __init__(self, kept_for: float = KEPT_FOR, max_unread: int = MAX_UNREAD) -> None:
        self.kept_for, self.max_unread = kept_for, max_unread
        self._threads: dict[str, AgUiThread] = {}
        self._unread: dict[str, asyncio.TimerHandle] = {}  # idle threads' expiry, oldest first
        self._closed = False

    def thread(self, room_id: str) -> AgUiThread:
        return self._threads.setdefault(room_id, AgUiThread())

    def get(self, room_id: str) -> AgUiThread | None:
        return self._threads.get(room_id)

    def held(self) -> tuple[int, int]:
        """How many threads this worker holds, and how many items their queues hold."""
        return len(self._threads), sum(t.queue.qsize() for t in self._threads.values())

    def turns_of(self, owner: str) -> int:
        """How many turns the token runs on this worker now."""
        return sum(1 for t in self._threads.values() if t.owner == owner and t.running)

    def forget(self, room_id: str, *, ended: bool = False) -> None:
        """Drop a thread whose turn ended and was read to its end (`ended`: its TurnEnded,
        the last thing its task does, was read): kept no longer than that."""
        thread = self._threads.get(room_id)
        if thread is not None and (ended or not thread.running) and thread.queue.empty():
            self._drop(room_id)

    @contextlib.contextmanager
    def reading(self, room_id: str) -> Iterator[AgUiThread]:
        """The thread, read by a run while in the block (not dropped meanwhile)."""
        thread = self.thread(room_id)
        thread.readers += 1
        self._keep(room_id)
        try:
            yield thread
        finally:
            thread.readers -= 1
            self._settle(room_id)

    def put(self, room_id: str, *items: Item) -> None:
        thread = self.thread(room_id)
        for item in items:
            thread.queue.put_nowait(item)
        self._settle(room_id)  # told of a turn this worker does not run: nobody may read it

    def start(self, room_id: str, run: Awaitable[str], owner: str) -> None:
        """Run a turn in the background: it outlives the run that started it (see above)."""
        thread = self.thread(room_id)
        self._keep(room_id)
        thread.owner = owner
        thread.turn = asyncio.create_task(self._turn(room_id, run))
        thread.turn.add_done_callback(lambda _: self._settle(room_id))

    def _settle(self, room_id: str) -> None:
        """An idle thread (see `AgUiThread.idle`) dropped now if it holds nothing, else when
        `kept_for` is over or `max_unread` newer ones wait."""
        thread = self._threads.get(room_id)
        if self._closed or thread is None or not thread.idle or room_id in self._unread:
            return
        if thread.queue.empty():
            self._drop(room_id)
            return
        loop = asyncio.get_running_loop()
        self._unread[room_id] = loop.call_later(self.kept_for, self._expire, room_id)
        while len(self._unread) > self.max_unread:
            self._expire(next(iter(self._unread)))

    def _expire(self, room_id: str) -> None:
        self._keep(room_id)
        thread = self._threads.get(room_id)
        if thread is not None and thread.idle:
            self._drop(room_id)

    def _keep(self, room_id: str) -> None:
        """The thread is read, or runs a turn again: no longer on its way out."""
        expiry = self._unread.pop(room_id, None)
        if expiry is not None:
            expiry.cancel()

    def _drop(self, room_id: str) -> None:
        self._keep(room_id)
        del self._threads[room_id]

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
        self._closed = True
        for expiry in self._unread.values():
            expiry.cancel()
        self._unread.clear()
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
