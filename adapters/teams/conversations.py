"""Messages to the bot: a personal chat, or a mention in a channel or group chat, starts or
continues an agent turn.

The room is the conversation (in a channel, the reply chain: the channel's conversation id with
`;messageid=<root>`); the actor is the sender's AAD object id. The Bot Framework may deliver an
activity more than once: the store's one-time claim on its conversation and id makes exactly one
delivery run, on whichever worker it lands.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

from microsoft_teams.api.activities.message import MessageActivity
from microsoft_teams.api.activities.utils.strip_mentions_text import StripMentionsTextOptions
from pydantic import ValidationError

from adapters.teams.cards import SURFACE
from adapters.teams.surface import PREFIX, THREAD_MARK, People, TeamsRoom, TeamsSurface
from adapters.teams.text import PlainTextFormatter
from bot import AIChannel
from bot.audit.refusals import AuditLog
from bot.bridge.surfaces import Claims
from bot.bridge.turns import Post, Turns
from bot.commands import Commands, Place
from bot.policies.deciders import Deciders
from bot.policies.drivers import refused_turn
from bot.records import StoreUnavailableError

log = logging.getLogger(__name__)

CHANNEL = "channel"
PERSONAL = "personal"
COMMAND = "hitl"  # "@bridge hitl grants": the commands of bot/commands/


def room_of(message: MessageActivity) -> TeamsRoom:
    """The conversation a message belongs to; a new post in a channel starts its reply chain."""
    conversation = message.conversation
    if conversation.conversation_type == CHANNEL and THREAD_MARK not in conversation.id:
        return TeamsRoom(f"{conversation.id}{THREAD_MARK}{message.id}")
    return TeamsRoom(conversation.id)


def user_of(activity: MessageActivity) -> str:
    """The sender as the core knows them: their AAD object id (their channel id without one)."""
    return activity.from_.aad_object_id or activity.from_.id


def is_from_person(message: MessageActivity) -> bool:
    """A person's message: not the bot's own, not from another bot."""
    sender = message.from_
    return bool(sender.id) and sender.id != message.recipient.id and sender.role != "bot"


def is_addressed(message: MessageActivity) -> bool:
    """A personal chat is always addressed to the bot; elsewhere it must be mentioned."""
    return message.conversation.conversation_type == PERSONAL or message.is_recipient_mentioned()


def text_of(message: MessageActivity) -> str:
    """The text without the bot's mention."""
    options = StripMentionsTextOptions(account_id=message.recipient.id)
    return (message.strip_mentions_text(options).text or "").strip()


class ActivityRows(Claims, AuditLog, Protocol):
    """What the conversations need of the store: an activity claimed once, a refused turn
    audited."""


class TeamsConversations:
    """Routes people's messages to agent turns and remembers how to reach them."""

    def __init__(
        self,
        *,
        channel: AIChannel,
        surface: TeamsSurface,
        store: ActivityRows,
        people: People,
        commands: Commands,
        deciders: Deciders,
    ) -> None:
        """`deciders` say who may drive the agent where (a policy file's `drivers`)."""
        self.channel = channel
        self.deciders = deciders
        self.surface = surface
        self.store = store
        self.people = people
        self.commands = commands
        self._turns = Turns(channel)

    async def on_message(self, activity: dict[str, Any]) -> None:
        """Handle one delivery of a message activity (after the HTTP response)."""
        try:
            message = MessageActivity.model_validate(activity)
        except ValidationError as err:
            log.warning("ignored a malformed Teams message: %s", err)
            return
        if not is_from_person(message) or not is_addressed(message):
            return
        key = f"teams:message:{message.conversation.id}:{message.id}"
        room = room_of(message)
        self.surface.remember(message.conversation.id, message.service_url)
        try:
            claimed = await self.store.claim_once(key)
        except StoreUnavailableError as err:  # nothing can be recorded: say so, not a traceback
            await self._turns.cannot_record(key, err, self._poster(room))
            return
        if not claimed:
            return  # another delivery of this activity ran (or is running) already
        user = user_of(message)
        self.people.learn(user, message.from_.id, message.from_.name)
        text = text_of(message)
        word, _, rest = text.partition(" ")
        if word.lower() in (COMMAND, f"/{COMMAND}"):
            private = message.conversation.conversation_type == PERSONAL
            await self._command(room, user, rest, private, message.from_.id)
        else:
            await self._start_turn(room, user, message.from_.id, text)

    async def _command(
        self, room: TeamsRoom, user: str, text: str, private: bool, channel_id: str
    ) -> None:
        """A command's answer, in the conversation (Teams has no private reply to a bot
        message: in a channel, everyone there sees it, so `mine` and the admin views are
        answered only in a personal chat). `channel_id` is the sender's other id (an admin
        may be listed by either)."""
        place = Place(f"{PREFIX}{room.base_id}", THREAD_MARK)
        aliases = (channel_id,) if channel_id and channel_id != user else ()
        try:
            lines = await self.commands.answer(
                text, place=place, user=user, private=private, aliases=aliases
            )
        except StoreUnavailableError as err:
            log.warning("a hitl command could not be answered: %s", err)
            lines = []
        fmt = PlainTextFormatter(self.people.name)
        said = "\n".join(line.render(fmt) for line in lines)
        await self.surface.post_text(room, said or "The bridge cannot read its records now.")

    async def _start_turn(self, room: TeamsRoom, user: str, user_id: str, text: str) -> None:
        """A turn, if the policy's `drivers` let this person drive the agent here; else a
        short reply saying so (Teams has no message only they would see in a channel), the
        refusal audited by the core."""
        refused = await refused_turn(
            self.deciders, self.store, room_id=room.room_id, user_id=user, surface=SURFACE,
            aliases=(user_id,),
        )  # fmt: skip
        if refused is not None:
            await self.surface.post_text(room, refused.render(PlainTextFormatter(self.people.name)))
            return
        self._turns.start(room.room_id, user, text, self._poster(room))

    def _poster(self, room: TeamsRoom) -> Post:
        async def post(reply: str) -> None:
            await self.surface.post_text(room, reply)

        return post

    async def close(self) -> None:
        await self._turns.close()
