"""Messages to the bot: a mention, a DM or a reply in its thread starts or continues a turn.

A message may instead answer an open question (bot/requests/replies.py): a reply in the thread
of a request's message answers that request; another message answers the one open question
in its conversation, or, with several, is answered with a chooser (one button per question,
carrying the words) and settles nothing until the writer picks one.

Slack may deliver one message several times: as `app_mention` and as `message` (different
event ids), and again on Events API retries. The store's one-time claim on the message's
channel and ts makes exactly one delivery run, on whichever worker it lands. When the store
cannot take that claim (read-only, down), a message addressed to the bot is answered that
nothing can be recorded right now, once, instead of being dropped.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from typing import Any, Protocol

from adapters.surfaces.slack.live_run import LiveRun, StreamSupport
from adapters.surfaces.slack.messages import TOO_LONG_TO_CHOOSE, question_of, render_chooser
from adapters.surfaces.slack.rooms import SlackRoom
from adapters.surfaces.slack.scheme import SURFACE
from adapters.surfaces.slack.status_line import StatusLines
from adapters.surfaces.slack.surface import SlackSurface
from adapters.surfaces.slack.text import SLACK, escape
from bot import AIChannel
from bot.agent.channel import Transcripts
from bot.audit.refusals import AuditLog
from bot.bridge.surfaces import Claims
from bot.bridge.turns import Post, StopResult, Turns
from bot.bridge.watches import Watches
from bot.human_input import RequestRows, RequestUpdate
from bot.policies.drivers import refused_turn
from bot.records import RequestRecord, StoreUnavailableError
from bot.requests.replies import AskWhich, reading_of, reply_interaction
from bot.requests.router import Invalid, Refused, Router

log = logging.getLogger(__name__)

# Subtypes of messages a person sends: a thread reply also sent to the channel, a message with
# a file, a /me message. Every other subtype is a notice (an edit, a deletion, a join, a bot's
# message...), never a new message of a person's.
PERSON_SUBTYPES = frozenset({"thread_broadcast", "file_share", "me_message"})


def room_of(event: dict[str, Any]) -> SlackRoom:
    """The thread a message belongs to; a DM outside threads is its own room."""
    thread_ts = event.get("thread_ts")
    if thread_ts is None and event.get("channel_type") == "im":
        return SlackRoom(event["channel"], "")
    return SlackRoom(event["channel"], thread_ts or event["ts"])


def strip_mention(text: str, bot_user_id: str) -> str:
    return re.sub(rf"<@{re.escape(bot_user_id)}(\|[^>]*)?>", "", text).strip()


def files_of(event: dict[str, Any]) -> str:
    """The files a message carries, one line each (name and link), for the agent to read."""
    lines = []
    for file in event.get("files") or []:
        if not isinstance(file, dict):
            continue
        name = file.get("name") or file.get("title") or "a file"
        link = file.get("permalink") or file.get("url_private")
        lines.append(f"[file: {name} {link}]" if link else f"[file: {name}]")
    return "\n".join(lines)


def text_of(event: dict[str, Any], bot_user_id: str) -> str:
    """What a person wrote, without the bot's mention, and the files they attached."""
    text = strip_mention(str(event.get("text") or ""), bot_user_id)
    files = files_of(event)
    return f"{text}\n{files}".strip() if files else text


def is_from_person(event: dict[str, Any], bot_user_id: str) -> bool:
    """A person's own new message: not a bot's, not an edit or a join notice."""
    return (
        event.get("subtype") in (None, *PERSON_SUBTYPES)
        and "bot_id" not in event
        and bool(event.get("user"))
        and event.get("user") != bot_user_id
    )


class ConversationRows(RequestRows, Transcripts, Claims, AuditLog, Protocol):
    """What the conversations need of the store: a message claimed once, the requests open
    in a room, whether a room has a transcript, and a refused turn audited."""


class SlackConversations:
    """Routes people's messages to answers (a pending question) or to agent turns."""

    def __init__(
        self,
        *,
        channel: AIChannel,
        surface: SlackSurface,
        store: ConversationRows,
        router: Router,
        bot_user_id: Callable[[], str],
        status_lines: StatusLines | None = None,
        streams: StreamSupport | None = None,
    ) -> None:
        """`streams`: whether this workspace streams replies
        (adapters/surfaces/slack/live_run.py)."""
        self.channel = channel
        self.surface = surface
        self.store = store
        self.router = router
        self.bot_user_id = bot_user_id
        self.streams = streams if streams is not None else StreamSupport()
        self._turns = Turns(channel, router)
        self.status_lines = status_lines  # a turn's status under its thread

    async def on_message(self, event: dict[str, Any], *, mentioned: bool) -> None:
        """Handle one delivery of a message event (called after the ack)."""
        bot = self.bot_user_id()
        if not is_from_person(event, bot):
            return
        key = f"slack:message:{event['channel']}:{event['ts']}"
        room = room_of(event)
        try:
            claimed = await self.store.claim_once(key)
        except StoreUnavailableError as err:  # nothing can be recorded: say so, not a traceback
            if await self._addressed_anyway(event, mentioned, room):
                await self._turns.cannot_record(key, err, self._poster(room))
            return
        if not claimed:
            return  # another delivery of this message ran (or is running) already
        user, text = event["user"], text_of(event, bot)
        if await self._answer_question(event, room, user, text):
            return
        if await self._addressed(event, mentioned, room):
            await self._start_turn(room, user, text)

    async def _addressed(self, event: dict[str, Any], mentioned: bool, room: SlackRoom) -> bool:
        """A mention, a DM, or a reply in a thread where the bot is talking."""
        if mentioned or f"<@{self.bot_user_id()}" in str(event.get("text") or ""):
            return True
        if event.get("channel_type") == "im":
            return True
        return bool(event.get("thread_ts")) and await self._bot_in_thread(room)

    async def _addressed_anyway(
        self, event: dict[str, Any], mentioned: bool, room: SlackRoom
    ) -> bool:
        """`_addressed`, for a store that may not answer reads either (a reply in a thread
        without a mention is then taken as not for the bot)."""
        try:
            return await self._addressed(event, mentioned, room)
        except StoreUnavailableError:
            return False

    async def _answer_question(
        self, event: dict[str, Any], room: SlackRoom, user: str, text: str
    ) -> bool:
        """Whether the message answered an open request (or asked which one it answers);
        through the router, as any answer. From the store, not memory: the question may have
        been asked by another worker, or by this one before a restart."""
        if not text:
            return False
        here = await self.store.pending_in_room(room.room_id)
        replied_to = await self._replied_to(event)
        reading = await reading_of(self.router, user, replied_to=replied_to, here=here)
        if reading is None:
            return False
        thread_ts = room.thread_ts or None
        if isinstance(reading, AskWhich):
            await self._ask_which(room, user, text, reading.records)
            return True
        reply = reply_interaction(reading.record.id, user, text, surface=SURFACE)
        outcome = await self.router.handle(reply, reading.record)
        if isinstance(outcome, Invalid):  # e.g. too long: say so, privately
            notice = "; ".join(escape(error) for error in outcome.errors.values())
            await self.surface.tell(room.channel, user, notice, thread_ts)
        elif isinstance(outcome, Refused):  # e.g. answered a moment ago
            await self.surface.tell(room.channel, user, outcome.notice.render(SLACK), thread_ts)
        return True

    async def _replied_to(self, event: dict[str, Any]) -> list[RequestRecord]:
        """The open requests whose own message this message is a reply to (in its thread):
        a request posted at the top of a channel or DM (room `slack:<channel>:`)."""
        thread_ts = event.get("thread_ts")
        if not thread_ts or thread_ts == event["ts"]:
            return []
        top = SlackRoom(event["channel"], "")
        return [
            record
            for record in await self.store.pending_in_room(top.room_id)
            if str((record.message_refs.get(SURFACE) or {}).get("ts")) == thread_ts
        ]

    async def _ask_which(
        self, room: SlackRoom, user: str, text: str, records: tuple[RequestRecord, ...]
    ) -> None:
        """The chooser; if the words are too long for its buttons, say so privately."""
        tools = self.router.tools
        asked = [(r.id, question_of(RequestUpdate.of(r), tools.get(r.tool_name))) for r in records]
        message = render_chooser(user, text, asked)
        if message is None:
            await self.surface.tell(room.channel, user, TOO_LONG_TO_CHOOSE, room.thread_ts or None)
            return
        await self.surface.post_message(room, message)

    async def _bot_in_thread(self, room: SlackRoom) -> bool:
        return bool(await self.store.load_transcript(room.room_id, self.channel.channel_id))

    async def _start_turn(self, room: SlackRoom, user: str, text: str) -> None:
        """A turn, if the policy's `drivers` let this person drive the agent here; else a
        private (ephemeral) notice, the refusal audited by the core."""
        refused = await refused_turn(
            self.router.deciders, self.store, room_id=room.room_id, user_id=user, surface=SURFACE
        )
        if refused is not None:
            await self.surface.tell(
                room.channel, user, refused.render(SLACK), room.thread_ts or None
            )
            return
        live = LiveRun(self.surface.client, self.surface, self.streams, room, user)
        self._turns.start(room.room_id, user, text, live.post, self._watches(live, room, user))

    # -- watching a turn live: its streamed reply and its status line --------------------------

    def _watches(self, live: LiveRun, room: SlackRoom, user: str) -> Watches:
        """What shows a turn live in its thread: the streamed reply with its task cards
        (adapters/surfaces/slack/live_run.py), then the status line
        (adapters/surfaces/slack/status_line.py)."""
        status = self.status_lines.watch(room, user) if self.status_lines is not None else None
        return Watches(live, *([status] if status is not None else []))

    def request_changed(self, update: RequestUpdate) -> None:
        """A request changed: the turn running in its room (if any) is told (its task card and
        status line say who it waits for)."""
        if not update.copy:
            self._turns.request_changed(update)

    def _poster(self, room: SlackRoom) -> Post:
        async def post(reply: str) -> None:
            await self.surface.post_text(room, reply)

        return post

    # -- the running turns: told of their requests, stopped (adapters/surfaces/slack/stops.py)

    async def stop(self, room_id: str, user: str) -> StopResult:
        return await self._turns.stop(room_id, user, f"<@{user}>")

    async def runs_in(self, channel: str) -> dict[str, str | None]:
        """Room -> whose turn, of the turns running in the channel's threads (any worker)."""
        return await self._turns.runs_in(SlackRoom(channel, "").room_id)

    async def close(self) -> None:
        await self._turns.close()
