"""Messages to the bot: a mention, a DM or a reply in its thread starts or continues a turn.

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
from typing import Any

from adapters.slack.rooms import SlackRoom
from adapters.slack.scheme import SURFACE
from adapters.slack.surface import SlackSurface
from adapters.slack.text import SLACK, escape
from bot import AIChannel
from bot.policies.drivers import refused_turn
from bot.records import RequestStore, StoreUnavailableError
from bot.requests.kinds import Verb
from bot.requests.router import Interaction, Invalid, Router, Settled
from bot.turns import Post, Turns

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


class Conversations:
    """Routes people's messages to answers (a pending question) or to agent turns."""

    def __init__(
        self,
        *,
        channel: AIChannel,
        surface: SlackSurface,
        store: RequestStore,
        router: Router,
        bot_user_id: Callable[[], str],
    ) -> None:
        self.channel = channel
        self.surface = surface
        self.store = store
        self.router = router
        self.bot_user_id = bot_user_id
        self._turns = Turns(channel)

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
        if await self._answer_question(room, user, text):
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

    async def _answer_question(self, room: SlackRoom, user: str, text: str) -> bool:
        """A thread reply answers the oldest open request there that takes replies (a
        question) and that `user` may answer; through the router, as any answer."""
        if not text:
            return False
        # From the store, not memory: the question may have been asked by another worker, or
        # by this one before a restart.
        for request in await self.store.pending_in_room(room.room_id):
            if not self.router.takes_replies(request):
                continue
            if not await self.router.may_answer(request, user):
                continue
            reply = Interaction(request.id, user, Verb.ANSWER, {"answer": text}, surface=SURFACE)
            outcome = await self.router.handle(reply, request)
            if isinstance(outcome, Invalid):  # e.g. too long: say so, privately
                notice = "; ".join(escape(error) for error in outcome.errors.values())
                await self.surface.tell(room.channel, user, notice, room.thread_ts or None)
                return True
            if isinstance(outcome, Settled):
                return True
        return False

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
        self._turns.start(room.room_id, user, text, self._poster(room))

    def _poster(self, room: SlackRoom) -> Post:
        async def post(reply: str) -> None:
            await self.surface.post_text(room, reply)

        return post

    async def close(self) -> None:
        await self._turns.close()
