"""A Slack turn shown live: its reply streamed into one message as the model writes it, a task
card per tool call and per request it waits on, a Stop button, closed when the turn ends.

Slack's AI-app methods (`chat.startStream`, `appendStream`, `stopStream`) carry it. The watch's
methods return at once (bot/agent/steps.py): what they are told is queued and sent by one
flush at a time, every `FLUSH_EVERY` seconds (a burst of tokens is one append) or at once when
a card changes. The loop's `post` (each complete reply) then sends only what the stream has
not shown, so nothing is said twice. The model's text is rendered by bot/words/model_text.py
(links show their targets, no image, no mass mention), over the whole reply: a flush holds back
the tail that more text could make a link or a mention of (`@chan` before its `nel`).

When streaming is not available (the workspace or plan refuses it, a scope is missing, the
method is unknown: any failed `chat.startStream`) the turn's replies are posted as single
messages, as before; a refusal that will not change is remembered for the workspace
(`StreamSupport`), so later turns do not ask again. A stream that breaks midway (Slack stopped
it) is finished the same way: what it did not show is posted as a message.
"""

from __future__ import annotations

import asyncio
import logging
from enum import Enum
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.calls import SlackCallError, call_slack, call_slack_or_fail
from adapters.surfaces.slack.rooms import SlackRoom
from adapters.surfaces.slack.run_chunks import (
    INTERRUPTED,
    JSON,
    SUSPENDED,
    request_chunk,
    stop_chunk,
    stopped_text,
    text_pieces,
    tool_chunk,
)
from adapters.surfaces.slack.surface import SlackSurface
from adapters.surfaces.slack.text import escape
from bot.agent.steps import ToolStep
from bot.bridge.watches import Ending, TurnEnd
from bot.human_input import RequestUpdate
from bot.words.model_text import defused, settled

log = logging.getLogger(__name__)

FLUSH_EVERY = 0.4  # seconds between appends while the model writes
# Refusals of chat.startStream that say the workspace cannot stream at all (not this call).
NOT_AVAILABLE = frozenset({
    "not_allowed", "missing_scope", "unknown_method", "not_allowed_token_type",
    "method_deprecated", "feature_not_enabled", "team_not_allowed", "restricted_action",
})  # fmt: skip


class StreamSupport:
    """Whether this workspace streams replies, learnt from its first refusal; and its team id
    (auth.test's), which a stream outside a DM names with its reader."""

    def __init__(self) -> None:
        self.available = True
        self.team_id = ""

    def refused(self, why: SlackCallError) -> None:
        if why.error in NOT_AVAILABLE:
            if self.available:
                log.warning("Slack: replies are posted whole from now on: %s", why)
            self.available = False


class Mode(Enum):
    WAITING = "waiting"  # nothing sent yet
    LIVE = "live"  # the stream is open
    WHOLE = "whole"  # no stream: replies are posted as messages
    CLOSED = "closed"  # the stream was stopped


class LiveRun:
    """A `TurnWatch` (bot/bridge/turns.py) streaming one turn into its thread, and the turn's
    `post` (`post`), which posts only what the stream did not show."""

    def __init__(
        self,
        client: AsyncWebClient,
        surface: SlackSurface,
        support: StreamSupport,
        room: SlackRoom,
        actor_id: str,
        flush_every: float = FLUSH_EVERY,
    ) -> None:
        self.client, self.surface, self.support = client, surface, support
        self.room, self.actor_id, self.flush_every = room, actor_id, flush_every
        self.mode = Mode.WAITING if support.available else Mode.WHOLE
        self.ts: str | None = None
        self._said = ""  # the reply's text as told so far, shown or not
        self._cards: dict[str, JSON] = {}  # task cards changed since the last flush, by id
        self._lead = ""  # what goes before the next text (between two replies)
        self._shown = ""  # the current reply's text the stream has shown (`_said`'s head)
        self._attempt = 0  # the reply being written: counted up when one is discarded
        self._lock = asyncio.Lock()  # one flush at a time, in order
        self._timer: asyncio.TimerHandle | None = None
        self._flushing: asyncio.Task[None] | None = None

    # -- the watch (synchronous: queued, sent by a flush)

    def thinking(self) -> None:
        return None

    def text(self, delta: str) -> None:
        if self.mode in (Mode.WAITING, Mode.LIVE) and delta:
            self._said += delta
            self._soon(urgent=self.mode is Mode.WAITING)

    def discarded(self) -> None:
        """The reply so far is not the reply: what was not sent is dropped; what was shown
        stays, followed by a note, and the reply asked again follows it."""
        self._said = ""
        self._attempt += 1
        if self._shown:
            self._lead, self._shown = INTERRUPTED, ""

    def tool_started(self, step: ToolStep) -> None:
        self._card(tool_chunk(step))

    def tool_finished(self, step: ToolStep) -> None:
        self._card(tool_chunk(step))

    def request_changed(self, update: RequestUpdate) -> None:
        if not update.copy:
            self._card(request_chunk(update))

    def _card(self, chunk: JSON) -> None:
        if self.mode in (Mode.WAITING, Mode.LIVE):
            self._cards[chunk["id"]] = chunk
            self._soon(urgent=True)

    # -- the turn's words, and its end

    async def post(self, reply: str) -> None:
        """A complete reply: the stream shows what it has not shown yet, or it is posted."""
        async with self._lock:
            await self._flush()
            if self.mode in (Mode.WAITING, Mode.LIVE):
                self._said = self._shown + _rest(reply, self._shown)
                await self._flush(whole=True)
            # Never streamed, or broke: what Slack did not show, posted once.
            rest = "" if self.mode is Mode.LIVE else _rest(reply, self._shown)
            self._shown = self._said = ""
            if self.ts is not None and self.mode is Mode.LIVE:
                self._lead = "\n\n"
        if rest.strip():
            await self.surface.post_text(self.room, rest)

    async def ended(self, end: TurnEnd) -> None:
        """Close the stream (saying who stopped the turn, if someone did)."""
        if self._timer is not None:
            self._timer.cancel()
        async with self._lock:
            await self._flush()
            closing = _closing(end)
            if self.mode is Mode.LIVE:
                self.mode = Mode.CLOSED
                await self._stop_stream(closing)
            elif closing and end.ending is Ending.STOPPED:
                await self._post_plain(closing)

    # -- sending

    def _soon(self, *, urgent: bool) -> None:
        """A flush now (urgent), or within `flush_every` if none is due."""
        if urgent and self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if urgent:
            self._start_flush()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(self.flush_every, self._start_flush)

    def _start_flush(self) -> None:
        self._timer = None
        if self._flushing is None or self._flushing.done():
            self._flushing = asyncio.create_task(self._flush_queued())

    async def _flush_queued(self) -> None:
        async with self._lock:
            await self._flush()
        if self.mode in (Mode.WAITING, Mode.LIVE) and (self._cards or self._unsent()):
            self._soon(urgent=False)  # came while Slack answered: the next in a while

    def _unsent(self, *, whole: bool = False) -> str:
        """The reply's text not shown yet: all of it (`whole`), or what can be shown now.

        Not what came since the last flush: `@chan` and `nel`, or `[Approve](` and
        `https://evil)`, would each look harmless. The tail that more text could make a
        mention or a link of is held back (bot/words/model_text.py), so every piece sent
        renders as the whole reply would.
        """
        upto = len(self._said) if whole else settled(self._said)
        return self._said[len(self._shown) : max(upto, len(self._shown))]

    async def _flush(self, *, whole: bool = False) -> None:
        """Send what is queued: start the stream with it, or append it."""
        cards = list(self._cards.values())
        self._cards.clear()
        if self.mode not in (Mode.WAITING, Mode.LIVE):
            return
        text = self._unsent(whole=whole)
        if not (text or cards):
            return
        markdown = self._lead + escape(defused(text)) if text else ""
        pieces, attempt = text_pieces(markdown) or [""], self._attempt
        sent = await (self._start(pieces[0], cards) if self.mode is Mode.WAITING
                      else self._append(pieces[0], cards))  # fmt: skip
        for piece in pieces[1:]:
            sent = sent and await self._append(piece, [])
        if sent and text and attempt != self._attempt:  # discarded while it was being sent
            self._lead = INTERRUPTED
        elif sent and text:
            self._shown += text
            self._lead = ""

    async def _start(self, markdown: str, cards: list[JSON]) -> bool:
        if not self.support.available:
            self.mode = Mode.WHOLE
            return False
        args: dict[str, Any] = {"channel": self.room.channel, "task_display_mode": "timeline"}
        if self.room.thread_ts:
            args["thread_ts"] = self.room.thread_ts
        if not self.room.channel.startswith("D"):  # outside a DM: whom it is streamed to
            args |= {"recipient_user_id": self.actor_id,
                     "recipient_team_id": self.support.team_id}  # fmt: skip
        args["chunks"] = [stop_chunk(self.room.room_id), *_text_chunk(markdown), *cards]
        try:
            answer = await call_slack_or_fail(
                lambda: self.client.api_call("chat.startStream", json=args), "chat.startStream"
            )
        except SlackCallError as err:
            self.support.refused(err)
            self.mode = Mode.WHOLE
            return False
        self.ts, self.mode = str(answer["ts"]), Mode.LIVE
        return True

    async def _append(self, markdown: str, cards: list[JSON]) -> bool:
        args = {"channel": self.room.channel, "ts": self.ts,
                "chunks": [*_text_chunk(markdown), *cards]}  # fmt: skip
        try:
            await call_slack_or_fail(
                lambda: self.client.api_call("chat.appendStream", json=args), "chat.appendStream"
            )
        except SlackCallError:
            self.mode = Mode.WHOLE  # the rest of the turn is posted as messages
            return False
        return True

    async def _stop_stream(self, closing: str) -> None:
        args: dict[str, Any] = {"channel": self.room.channel, "ts": self.ts}
        if closing:
            args["markdown_text"] = f"\n\n_{closing}_"
        await call_slack(
            lambda: self.client.api_call("chat.stopStream", json=args), "chat.stopStream"
        )

    async def _post_plain(self, text: str) -> None:
        """Our own words (a mention included): not the model's, so not escaped."""
        await call_slack(
            lambda: self.client.chat_postMessage(
                channel=self.room.channel, thread_ts=self.room.thread_ts or None, text=text
            ),
            "chat.postMessage",
        )


def _closing(end: TurnEnd) -> str:
    """What ends a turn's stream: who stopped it, or that its worker shut down."""
    if end.ending is Ending.STOPPED:
        return stopped_text(end.by)
    return SUSPENDED if end.ending is Ending.SUSPENDED else ""


def _text_chunk(markdown: str) -> list[JSON]:
    return [{"type": "markdown_text", "text": markdown}] if markdown else []


def _rest(reply: str, shown: str) -> str:
    """What of a complete reply a stream has not shown (all of it, if the stream showed
    something else: better twice than never)."""
    if reply.startswith(shown):
        return reply[len(shown) :]
    return reply
