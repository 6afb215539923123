"""A turn shown live in Teams (a `TurnWatch`, bot/bridge/turns.py): the typing indicator, the
reply streamed in personal chats, a Stop button, and how the turn ended.

- Typing: a `typing` activity when the turn starts and each time the model is asked again,
  renewed as it fades while the model writes a reply that is not streamed.
- Personal chats (the only conversations Teams streams in): each reply of the model is one
  streamed message (reply_stream.py): informative lines while nothing is written ("Thinking…",
  "Running lookup…", "Waiting for Bob Baker to approve: Deploy v2"), then the text as it grows
  (each piece the whole text so far, rendered by bot/words/model_text.py, less a tail that may
  yet become a link or a mention), then the final message with the whole reply. Pieces go at
  most one per `interval` seconds (Teams takes about one a second): what the model wrote
  meanwhile is sent together.
- Elsewhere, or once Teams refused a stream (403) or a piece failed for good: the reply is one
  plain message, as the turn's `post` always posted it; a reply already in a stream is never
  posted again.
- Stop: a turn that runs a tool (it may take a while, or wait for a person) gets a small card
  with Stop beside its reply (stop_card.py: the streamed message cannot carry one), updated to
  how the turn ended. A stopped turn's last message says "Stopped by <name>".

The steps are told synchronously (they must return at once): they only change what should be
shown, and one task (the pump) sends it; the turn's `post` and `ended` wait for the pump's
piece in flight, so pieces go out one at a time and in order.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Coroutine
from typing import Any

from adapters.surfaces.teams.connector import card_activity, text_activity, typing_activity
from adapters.surfaces.teams.reply_stream import ReplyStream
from adapters.surfaces.teams.stop_card import stop_card
from adapters.surfaces.teams.surface import TeamsRoom, TeamsSurface
from adapters.surfaces.teams.text import TITLE as SUBJECT
from adapters.surfaces.teams.text import clean, cut
from bot import RenderState, RequestUpdate
from bot.agent.steps import ToolStep
from bot.bridge.watches import Ending, TurnEnd
from bot.words.model_text import settled
from bot.words.phrases import listed

log = logging.getLogger(__name__)

STREAM_INTERVAL = 1.0  # seconds between two pieces of a stream: Teams' rate
TYPING_EVERY = 3.0  # seconds: Teams shows a typing indicator about so long
THINKING = "Thinking…"
DONE = "Done."
FAILED = "Could not finish."
SUSPENDED = "This worker of the bridge stopped here: the rest follows in the next message."
APPROVAL_TOOL = "requestApproval"
_SUBJECT_KEYS = ("action", "question", "title", "message")  # what a request is about

NameOf = Callable[[str | None], str | None]


class TeamsLiveRun:
    """One turn in one Teams conversation, shown live (see the module's docstring)."""

    def __init__(
        self,
        surface: TeamsSurface,
        room: TeamsRoom,
        *,
        streams: bool,
        name_of: NameOf,
        interval: float = STREAM_INTERVAL,
        stop: Callable[[], Coroutine[Any, Any, object]] | None = None,
        refused: Callable[[], None] | None = None,
    ) -> None:
        """`streams`: the conversation is a personal chat. `name_of` names people by their
        AAD object id (the surface's People). `stop` stops the turn for the chat's person:
        what Teams' own stop button on a streamed message means. `refused` is told when Teams
        refused to start a stream here (the conversation's next turns need not try again)."""
        self.surface = surface
        self.stop = stop
        self.refused = refused
        self._stopping: asyncio.Task[object] | None = None
        self.room = room
        self.streams = streams
        self.name_of = name_of
        self.interval = interval
        self._line = ""  # the informative line to show while nothing is written
        self._text = ""  # what the model wrote of its current reply
        self._stream: ReplyStream | None = None
        self._typing = False  # a typing indicator is due now
        self._writing = False  # the model is writing a reply not streamed: typing goes on
        self._last_typing = float("-inf")
        self._stop_wanted = False
        self._stop_tried = False
        self._stop_card: str | None = None  # the Stop card's activity id, once posted
        self._last_piece = float("-inf")  # monotonic time of the stream's last piece
        self._lock = asyncio.Lock()  # one send at a time
        self._pump: asyncio.Task[None] | None = None
        self._woken = asyncio.Event()  # something new to show: a waiting pump looks again
        self._informed = ""  # the stream's last informative line
        self._ended = False

    # -- the steps (RunSteps): they only say what to show, the pump shows it

    def thinking(self) -> None:
        self._typing = self._writing = True
        self._show(THINKING)

    def text(self, delta: str) -> None:
        self._text += delta
        self._kick()

    def discarded(self) -> None:
        self._text = ""  # the next piece shows the reply asked for again

    def tool_started(self, step: ToolStep) -> None:
        self._writing = False  # a tool may take long, or wait for a person: no typing
        self._want_stop()
        self._show(f"Running {step.name}…")

    def tool_finished(self, step: ToolStep) -> None:
        return None  # the model is asked again next: "Thinking…"

    def request_changed(self, update: RequestUpdate) -> None:
        if update.copy or update.room_id != self.room.room_id:
            return  # a copy shown here belongs to another room's turn
        if update.state is RenderState.EXECUTING:
            self._want_stop()
            self._show(self.waiting_line(update))

    def waiting_line(self, update: RequestUpdate) -> str:
        """ "Waiting for Bob Baker to approve: Deploy v2", by name where we know them."""
        who = update.audience.who(update.actor_id) if update.audience is not None else None
        ids = list(who.people.values()) if who is not None else [update.actor_id]
        names = [self.name_of(i) or i if i else "anyone here" for i in ids] or ["anyone here"]
        verb = "approve" if update.tool_name == APPROVAL_TOOL else "answer"
        subject = next(
            (str(update.arguments[k]) for k in _SUBJECT_KEYS if update.arguments.get(k)),
            update.tool_name,
        )
        return clean(f"Waiting for {listed(names)} to {verb}: {cut(subject, SUBJECT)}")

    def _want_stop(self) -> None:
        self._stop_wanted = not self._stop_tried

    def _show(self, line: str) -> None:
        self._line = clean(line)
        self._kick()

    # -- the pump

    def _kick(self) -> None:
        if self._ended or self._due() is None:
            return  # nothing to show (a reply that is not streamed waits for `post`)
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._pumped())
        else:
            self._woken.set()  # it may be waiting out the typing indicator: this may not wait

    async def _pumped(self) -> None:
        try:
            while not self._ended:
                wait = self._due()
                if wait is None:
                    return
                if wait > 0:  # Teams' rate: what comes meanwhile goes together
                    self._woken.clear()
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(self._woken.wait(), wait)
                    continue
                async with self._lock:
                    if not self._ended:
                        await self._send_next()
        except Exception:
            log.exception("showing a turn live in Teams failed")

    def _due(self) -> float | None:
        """Seconds until the next piece may go (0: now), or None when nothing waits."""
        if self._typing or self._stop_wanted:
            return 0.0
        now, waits = time.monotonic(), []
        if self._writing and not self.streams:  # the typing indicator, renewed as it fades
            waits.append(self._last_typing + TYPING_EVERY - now)
        if self._stream_piece() is not None:
            waits.append(self._last_piece + self.interval - now)
        return max(0.0, min(waits)) if waits else None

    def _stream_piece(self) -> tuple[str, str] | None:
        """("grow", text) or ("inform", line) when the stream has something new to show."""
        if not self.streams:
            return None
        stream = self._stream
        if stream is not None and (stream.broken or stream.finished):
            return None
        shown = stream.shown if stream is not None else ""
        # Not a tail more text could make a link or a mention of: `[Approve` or `<at>ever`
        # would show as written until the next piece (bot/words/model_text.py).
        growing = self._text[: settled(self._text)]
        if growing and growing != shown:
            return ("grow", growing)
        if self._line and not shown and self._line != self._informed:
            return ("inform", self._line)
        return None

    async def _send_next(self) -> None:
        renewed = self._writing and not self.streams
        if self._typing or (renewed and time.monotonic() >= self._last_typing + TYPING_EVERY):
            self._typing, self._last_typing = False, time.monotonic()
            await self._send_typing()
            return
        if self._stop_wanted:
            self._stop_wanted, self._stop_tried = False, True  # posted once, or not at all
            await self._post_stop_card()
            return
        piece = self._stream_piece()
        if piece is None:
            return
        stream = self._current_stream()
        if stream is None:
            return
        kind, content = piece
        if kind == "grow":
            await stream.grow(content)
        elif await stream.inform(content):
            self._informed = content
        self._last_piece = time.monotonic()  # once answered: the next arrives `interval` later
        if stream.broken:
            self.streams = False  # fall back to plain messages for the rest of the turn
            self._stopped_in_teams(stream)
            if stream.id is None and self.refused is not None:
                self.refused()

    def _stopped_in_teams(self, stream: ReplyStream) -> None:
        """The person pressed Teams' stop on the streamed message: the turn is stopped (in a
        task of its own: the stop ends this run, and its pump with it)."""
        if stream.cancelled and self.stop is not None and self._stopping is None:
            self._stopping = asyncio.create_task(self.stop())

    def _current_stream(self) -> ReplyStream | None:
        """The reply's stream: the open one, or a new one (each reply of the model is one)."""
        if self._stream is None:
            service_url = self.surface.service_url(self.room)
            if service_url is None:
                self.streams = False
                return None
            self._stream = ReplyStream(
                self.surface.connector, service_url, self.room.conversation_id
            )
            self._informed = ""
        return self._stream

    async def _send_typing(self) -> None:
        service_url = self.surface.service_url(self.room)
        if service_url is not None:
            await self.surface.connector.send(
                service_url, self.room.conversation_id, typing_activity()
            )

    async def _post_stop_card(self) -> None:
        service_url = self.surface.service_url(self.room)
        if service_url is None:
            return
        card = card_activity(stop_card(self.room.room_id))
        self._stop_card = await self.surface.connector.send(
            service_url, self.room.conversation_id, card
        )

    # -- the turn's words and its end

    async def post(self, reply: str) -> None:
        """The turn's `Post`: a reply of the model's, whole. It ends the reply's stream (the
        final message) or, where nothing streams, is posted as one plain message."""
        async with self._lock:
            stream, self._text, self._line = self._stream, "", ""
            self._writing = False
            try:
                if stream is not None and await self._ended_stream(stream, reply):
                    return
            finally:
                if stream is None or not stream.open:
                    self._stream = None  # the next reply is a stream of its own
                # else the turn was cut meanwhile: its end closes the stream (`ended`)
        await self.surface.post_text(self.room, reply)

    async def _ended_stream(self, stream: ReplyStream, text: str) -> bool:
        """`text` as the stream's last word: its final message, or (a stream Teams cut off)
        its message replaced in place; False when it could be neither (post it anew)."""
        if stream.open:
            await asyncio.sleep(max(0.0, self._last_piece + self.interval - time.monotonic()))
            finished = await stream.finish(text)
            self._last_piece = time.monotonic()
            if finished:
                return True
        self.streams = False
        if stream.cancelled:
            self._stopped_in_teams(stream)
            return True  # they stopped it: the rest of the reply is not wanted
        if stream.id is None or not stream.shown:
            return False  # nothing of the reply is shown: a plain message says it once
        return await self.surface.connector.update(
            stream.service_url, stream.conversation_id, stream.id, text_activity(text)
        )

    async def ended(self, end: TurnEnd) -> None:
        """The turn's last word: a stopped turn says who stopped it (in its open stream, or
        as a message); the Stop card says how it ended."""
        self._ended = True
        async with self._lock:
            stopped = self.stopped_line(end)
            closing = SUSPENDED if end.ending is Ending.SUSPENDED else stopped
            stream, self._stream = self._stream, None
            if stream is not None and stream.open:
                last = "\n\n".join(part for part in (stream.shown, closing) if part)
                if await self._ended_stream(stream, last or DONE):
                    stopped = ""
            if stopped:
                await self.surface.post_text(self.room, stopped)
            await self._close_stop_card(end)
        if self._pump is not None:
            self._pump.cancel()

    def stopped_line(self, end: TurnEnd) -> str:
        if end.ending is not Ending.STOPPED:
            return ""
        return clean(f"Stopped by {self.name_of(end.by) or end.by or 'someone'}.")

    async def _close_stop_card(self, end: TurnEnd) -> None:
        service_url = self.surface.service_url(self.room)
        if self._stop_card is None or service_url is None:
            return
        endings = {Ending.FINISHED: DONE, Ending.FAILED: FAILED, Ending.SUSPENDED: SUSPENDED}
        line = endings.get(end.ending) or self.stopped_line(end)
        card = card_activity(stop_card(self.room.room_id, line, live=False))
        await self.surface.connector.update(
            service_url, self.room.conversation_id, self._stop_card, card
        )
