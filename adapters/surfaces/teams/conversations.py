"""Messages to the bot: a personal chat, or a mention in a channel or group chat, starts or
continues an agent turn.

The room is the conversation (in a channel, the reply chain: the channel's conversation id with
`;messageid=<root>`); the actor is the sender's AAD object id. The Bot Framework may deliver an
activity more than once: the store's one-time claim on its conversation and id makes exactly one
delivery run, on whichever worker it lands.
"""

from __future__ import annotations

import logging
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from microsoft_teams.api.activities.message import MessageActivity
from microsoft_teams.api.activities.utils.strip_mentions_text import StripMentionsTextOptions
from pydantic import ValidationError

from adapters.surfaces.teams.cards import SURFACE
from adapters.surfaces.teams.invokes import card_response, message_response, sender_of
from adapters.surfaces.teams.live_run import STREAM_INTERVAL, TeamsLiveRun
from adapters.surfaces.teams.stop_card import stop_card
from adapters.surfaces.teams.surface import (
    PREFIX,
    THREAD_MARK,
    People,
    TeamsRoom,
    TeamsSurface,
    base_conversation_id,
    parse_room,
)
from adapters.surfaces.teams.text import PlainTextFormatter, clean
from bot import AIChannel
from bot.audit.refusals import AuditLog
from bot.bridge.surfaces import Claims
from bot.bridge.turns import Post, StopResult, Turns
from bot.bridge.watches import Watches
from bot.commands import Commands, Place
from bot.policies.deciders import Deciders
from bot.policies.drivers import refused_turn
from bot.records import StoreUnavailableError
from bot.requests.router import Router

log = logging.getLogger(__name__)

CHANNEL = "channel"
PERSONAL = "personal"
COMMAND = "hitl"  # "@bridge hitl grants": the commands of bot/commands/
STOP = "stop"  # "@bridge hitl stop": the turn running in this conversation (not bot/commands/:
# a turn is the conversations' own)
NOTHING_RUNNING = "Nothing is running here."
STOPPING = "Stopping: it stops within a few seconds."  # another worker runs it (ASKED)
UNSTREAMED_SECONDS = 600.0  # a chat where Teams refused a stream is not streamed in so long
UNSTREAMED_KEPT = 10_000  # such chats remembered at most
NOT_YOURS = "Only the person who asked, an approver of its requests or an admin can stop this."


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
        router: Router | None = None,
        stream_interval: float = STREAM_INTERVAL,
    ) -> None:
        """`deciders` say who may drive the agent where (a policy file's `drivers`); `router`
        who may stop a turn (its approvers, admins); `stream_interval` the seconds between
        two pieces of a streamed reply (live_run.py)."""
        self.channel = channel
        self.deciders = deciders
        self.surface = surface
        self.store = store
        self.people = people
        self.commands = commands
        self.stream_interval = stream_interval
        self._unstreamed: OrderedDict[str, float] = OrderedDict()  # conversation -> until
        self._turns = Turns(channel, router)
        surface.watchers.append(self._turns.request_changed)

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
        personal = message.conversation.conversation_type == PERSONAL
        if word.lower() in (COMMAND, f"/{COMMAND}") and rest.strip().lower() == STOP:
            await self._stop_command(room, user, message.from_.id, message.from_.name)
        elif word.lower() in (COMMAND, f"/{COMMAND}"):
            await self._command(room, user, rest, personal, message.from_.id)
        else:
            await self._start_turn(room, user, message.from_.id, text, personal)

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

    async def _start_turn(
        self, room: TeamsRoom, user: str, user_id: str, text: str, personal: bool
    ) -> None:
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
        shown_as = clean(self.people.name(user) or "")

        async def stopped_in_teams() -> StopResult:  # Teams' own stop, in a personal chat
            return await self._turns.stop(room.room_id, user, shown_as, _other(user, user_id))

        live = TeamsLiveRun(
            self.surface, room, streams=personal and self._streams_in(room),
            name_of=self.people.name, interval=self.stream_interval, stop=stopped_in_teams,
            refused=self._refused_stream(room),
        )  # fmt: skip
        self._turns.start(room.room_id, user, text, live.post, Watches(live))

    def _streams_in(self, room: TeamsRoom) -> bool:
        """Whether a personal chat's replies are streamed: not for a while after Teams refused
        (streaming turned off for the bot or the tenant), so each turn does not ask again."""
        until = self._unstreamed.get(room.conversation_id)
        if until is not None and until <= time.monotonic():
            del self._unstreamed[room.conversation_id]
            until = None
        return until is None

    def _refused_stream(self, room: TeamsRoom) -> Callable[[], None]:
        def refused() -> None:
            self._unstreamed[room.conversation_id] = time.monotonic() + UNSTREAMED_SECONDS
            self._unstreamed.move_to_end(room.conversation_id)
            while len(self._unstreamed) > UNSTREAMED_KEPT:
                self._unstreamed.popitem(last=False)

        return refused

    # -- Stop: typed, or clicked on a turn's Stop card (live_run.py)

    async def _stop_command(
        self, room: TeamsRoom, user: str, user_id: str, name: str | None
    ) -> None:
        """`@bridge hitl stop`: the turn's last message says who stopped it; a refusal is
        said in the conversation (Teams has no reply only they would see)."""
        result = await self._turns.stop(
            room.room_id, user, clean(name or ""), _other(user, user_id)
        )
        if result is not StopResult.STOPPED:  # its end says who stopped it
            await self.surface.post_text(room, _said(result))

    async def on_stop_click(self, activity: Mapping[str, Any], room_id: str) -> dict[str, Any]:
        """The invoke response to a click on Stop: the card as it now stands for them, or a
        line only they see when they may not stop the turn."""
        user, teams_user_id, name = sender_of(activity)
        conversation = activity.get("conversation") or {}
        room = parse_room(room_id)
        here = base_conversation_id(str(conversation.get("id") or ""))
        if not user or room is None or room.base_id != here:
            return message_response(NOTHING_RUNNING)  # a card of another conversation
        self.people.learn(user, teams_user_id, name)
        shown_as = clean(name or "")
        result = await self._turns.stop(room_id, user, shown_as, _other(user, teams_user_id))
        if result is StopResult.STOPPED:
            return card_response(stop_card(room_id, f"Stopped by {shown_as or user}.", live=False))
        return message_response(_said(result))

    def _poster(self, room: TeamsRoom) -> Post:
        async def post(reply: str) -> None:
            await self.surface.post_text(room, reply)

        return post

    async def close(self) -> None:
        await self._turns.close()


def _other(user: str, teams_user_id: str | None) -> tuple[str, ...]:
    """A person's other id (the Bot Framework's `29:` id beside the Entra one), which an
    admin may be listed by."""
    return (teams_user_id,) if teams_user_id and teams_user_id != user else ()


def _said(result: StopResult) -> str:
    """What a stop that did not stop the turn here says."""
    if result is StopResult.ASKED:
        return STOPPING
    return NOTHING_RUNNING if result is StopResult.NOT_RUNNING else NOT_YOURS
