"""The Teams surface: posts each request's card in its conversation and updates it in place.

The card in the conversation is always the read-only one; its `refresh.userIds` (the actor,
the approvers and admins we know, and the approvers its policy rule names: refresh.py; at most
60) make their Teams clients fetch the live card with an automatic `adaptiveCard/action`
refresh (see invokes.py). Every transition updates the
activity in place (PUT), so a settled request never keeps live controls.

Updates of one request are shown in order (a lock per tool call); a failed Bot Connector call is
retried, and logged as an error if it never succeeds (connector.py). A new request whose card
cannot be posted at all is undeliverable: `observe` raises UndeliverableError, and the core
settles it so (the model is told the person could not be reached).
"""

from __future__ import annotations

import dataclasses
import logging
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from adapters.surfaces.teams.cards import SURFACE, Drawing, render_card
from adapters.surfaces.teams.connector import (
    Connector,
    ConnectorError,
    card_activity,
    text_activity,
)
from adapters.surfaces.teams.inputs import Filled
from adapters.surfaces.teams.refresh import RefreshList, is_teams_user_id
from adapters.surfaces.teams.text import PlainTextFormatter, TeamsFormatter
from bot import HumanTool, RenderState, RequestUpdate, UndeliverableError
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.human_input import RequestRows
from bot.policies.directory import Directory
from bot.records import RequestRecord
from bot.requests.copies import CopyRefs, MemoryCopies
from bot.requests.kinds import Verb
from bot.requests.stored_requests import posted_record
from bot.requests.trail import MessageTrail
from bot.words.phrases import Phrase

log = logging.getLogger(__name__)

PREFIX = "teams:"
THREAD_MARK = ";messageid="


# -- rooms --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TeamsRoom:
    """A conversation: a personal or group chat, or one reply chain of a channel
    (the channel's conversation id with `;messageid=<root message id>`)."""

    conversation_id: str

    @property
    def room_id(self) -> str:
        return f"{PREFIX}{self.conversation_id}"

    @property
    def base_id(self) -> str:
        """The conversation without the reply chain (the channel, for a channel thread)."""
        return base_conversation_id(self.conversation_id)


def parse_room(room_id: str) -> TeamsRoom | None:
    """The Teams room a core room id names, or None for another surface's room."""
    if not room_id.startswith(PREFIX):
        return None
    conversation_id = room_id.removeprefix(PREFIX)
    return TeamsRoom(conversation_id) if conversation_id else None


def base_conversation_id(conversation_id: str) -> str:
    return conversation_id.split(THREAD_MARK, 1)[0]


__all__ = [
    "CardRef", "People", "Person", "TeamsRoom", "TeamsSurface", "base_conversation_id",
    "is_teams_user_id", "parse_room",
]  # fmt: skip


# -- people -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Person:
    aad_object_id: str
    user_id: str  # the Bot Framework id ("29:…"): what `refresh.userIds` lists
    name: str | None


MAX_PEOPLE = 20_000  # people remembered at most: past this, who was heard from last is kept


class People:
    """Who we have heard from, by AAD object id (the id the core's actors and answers use):
    their latest name with every activity they send (and the roster's, refresh.py)."""

    def __init__(self, most: int = MAX_PEOPLE) -> None:
        self._people: OrderedDict[str, Person] = OrderedDict()
        self._most = most

    def learn(self, aad_object_id: str, user_id: str, name: str | None) -> None:
        known = self._people.pop(aad_object_id, None)
        if known is not None:
            user_id, name = user_id or known.user_id, name or known.name
        self._people[aad_object_id] = Person(aad_object_id, user_id, name)
        while len(self._people) > self._most:
            self._people.popitem(last=False)

    def name(self, aad_object_id: str | None) -> str | None:
        person = self._people.get(aad_object_id) if aad_object_id else None
        return person.name if person else None

    def user_id(self, aad_object_id: str | None) -> str | None:
        person = self._people.get(aad_object_id) if aad_object_id else None
        return person.user_id if person and person.user_id else None


# -- where a card was posted --------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CardRef:
    """A posted card, as `RequestRecord.message_refs["teams"]` holds it."""

    service_url: str
    conversation_id: str
    activity_id: str
    user_ids: tuple[str, ...] = ()  # its refresh.userIds
    actor_name: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "service_url": self.service_url,
            "conversation_id": self.conversation_id,
            "activity_id": self.activity_id,
            "user_ids": list(self.user_ids),
            "actor_name": self.actor_name,
        }

    @classmethod
    def of(cls, record: RequestRecord) -> CardRef | None:
        return cls.read(record.message_refs.get(SURFACE))

    @classmethod
    def read(cls, ref: Mapping[str, Any] | None) -> CardRef | None:
        """The card `to_json` wrote, or None."""
        if not ref:
            return None
        return cls(
            service_url=str(ref["service_url"]),
            conversation_id=str(ref["conversation_id"]),
            activity_id=str(ref["activity_id"]),
            user_ids=tuple(str(u) for u in ref.get("user_ids") or ()),
            actor_name=ref.get("actor_name"),
        )


# -- the surface --------------------------------------------------------------------------------


class TeamsSurface:
    """The core's surface (bot/bridge/surfaces.py) for rooms that are Teams conversations."""

    name = SURFACE
    room_prefix = PREFIX

    def __init__(
        self,
        connector: Connector,
        store: RequestRows,
        tools: Mapping[str, HumanTool],
        people: People,
        deciders: Iterable[str] = (),
        copies: CopyRefs | None = None,
        directory: Directory | None = None,
    ) -> None:
        """`copies` keeps where the copies a policy's `deliver` adds were posted (a Teams
        channel): the store's rows (bot.store.copies) for several workers. `directory` reads
        the Entra groups a policy names (their members get the live card too)."""
        self.connector = connector
        self.store = store
        self.copies = copies if copies is not None else MemoryCopies()
        self.tools = tools
        self.people = people
        # Approvers and admins (AAD object ids, or Teams user ids): they get the live card too.
        self.deciders = tuple(sorted(set(deciders)))
        self.refresh = RefreshList(people, self.deciders, connector.client, directory)
        # Told every change of a request in a Teams room, once its card shows it (the running
        # turn's live view: conversations.py).
        self.watchers: list[Callable[[RequestUpdate], None]] = []
        self._service_urls: dict[str, str] = {}  # base conversation id -> serviceUrl
        self._trail: MessageTrail[TeamsRoom, CardRef] = MessageTrail(
            self, SURFACE, store.get_request
        )

    # -- what we learn from incoming activities

    def remember(self, conversation_id: str, service_url: str | None) -> None:
        """The serviceUrl to reach a conversation: proactive posts and updates need it."""
        if conversation_id and service_url:
            self._service_urls[base_conversation_id(conversation_id)] = service_url

    def service_url(self, room: TeamsRoom) -> str | None:
        return self._service_urls.get(room.base_id)

    def refresh_user_ids(self, actor_id: str | None) -> tuple[str, ...]:
        """Who gets the live card by automatic refresh without asking anyone (Teams wants
        their Teams user ids, not AAD object ids): the actor, then the approvers and admins
        configured by Teams user id or whose id we learned; at most 60. A card posted or
        updated also lists its policy rule's approvers (`refresh_for`)."""
        return self.refresh.configured(actor_id)

    async def refresh_for(
        self, update: RequestUpdate, service_url: str | None, conversation_id: str,
        kept: Sequence[str] = (),
    ) -> tuple[str, ...]:  # fmt: skip
        """The refresh list of the card of `update` in a conversation (refresh.py)."""
        return await self.refresh.user_ids(
            update, service_url, base_conversation_id(conversation_id), kept
        )

    # -- rendering, shared with the invokes

    def render(
        self,
        update: RequestUpdate,
        *,
        live: bool,
        ref: CardRef | None = None,
        viewer: str | None = None,
        notice: Phrase | None = None,
        open: Verb | None = None,
        filled: Filled | None = None,
        user_ids: Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """The card for `update`: live (with controls) or read-only. A pending request's card
        keeps its refresh clause (its deciders get the live card: `user_ids`, else the card's
        as kept), a settled one has none. `viewer` is whom an invoke answers; `notice`,
        `open` and `filled` see `Drawing`."""
        pending = update.state is RenderState.EXECUTING
        if user_ids is None:
            user_ids = (ref.user_ids if ref else ()) or self.refresh_user_ids(update.actor_id)

        def name_of(user_id: str) -> str | None:
            known = self.people.name(user_id)
            if known is None and ref is not None and user_id == update.actor_id:
                return ref.actor_name
            return known

        # A person field offers whom the card already names: the viewer and the actor.
        people = tuple(
            (user_id, name)
            for user_id in dict.fromkeys((viewer, update.actor_id))
            if user_id and (name := name_of(user_id))
        )
        drawing = Drawing(
            fmt=TeamsFormatter(name_of),
            refresh_user_ids=user_ids if pending else (),
            notice=notice,
            open=open,
            filled=filled or Filled(),
            people=people,
        )
        tool = self.tools.get(update.tool_name)
        return render_card(update, tool, live=live and pending, drawing=drawing)

    # -- the observer

    async def observe(self, update: RequestUpdate) -> None:
        room = parse_room(update.room_id)
        if room is not None:
            await self._trail.show(update, room)
            for watcher in self.watchers:
                watcher(update)

    # -- the core's Messages (bot/requests/trail.py): post, edit, keep, stored

    def _drawn(
        self, update: RequestUpdate, ref: CardRef | None = None, user_ids: Sequence[str] = ()
    ) -> dict[str, Any]:
        """The card posted in the conversation: read-only (its deciders, `user_ids`, get the
        live one by refresh), but live for a request with no actor, which is anyone's there."""
        live = update.state is RenderState.EXECUTING and update.actor_id is None
        return self.render(update, live=live, ref=ref, user_ids=user_ids)

    async def post(self, room: TeamsRoom, update: RequestUpdate) -> CardRef:
        user_ids = await self.refresh_for(update, self.service_url(room), room.conversation_id)
        try:
            posted = await self._post_or_fail(room, self._drawn(update, user_ids=user_ids))
        except ConnectorError as err:
            raise UndeliverableError(str(err)) from None
        return dataclasses.replace(posted, user_ids=user_ids)

    async def edit(self, ref: CardRef, update: RequestUpdate) -> bool:
        user_ids = await self.refresh_for(
            update, ref.service_url, ref.conversation_id, ref.user_ids
        )
        return await self._update(ref, self._drawn(update, ref, user_ids))

    async def keep(self, update: RequestUpdate, ref: CardRef) -> CardRef:
        user_ids = await self.refresh_for(
            update, ref.service_url, ref.conversation_id, ref.user_ids
        )
        kept = CardRef(
            ref.service_url,
            ref.conversation_id,
            ref.activity_id,
            user_ids or self.refresh_user_ids(update.actor_id),
            self.people.name(update.actor_id),
        )
        if update.copy:
            await self.copies.keep(update.pending_id, SURFACE, update.room_id, kept.to_json())
        else:
            await self.store.set_message_ref(update.pending_id, SURFACE, kept.to_json())
        return kept

    async def stored(self, update: RequestUpdate) -> CardRef | None:
        if update.copy:
            ref = CardRef.read(await self.copies.ref(update.pending_id, SURFACE, update.room_id))
        else:
            record = await posted_record(self.store, update.pending_id, SURFACE)
            ref = CardRef.of(record) if record is not None else None
        if ref is not None:  # after a restart, the stored card is how we reach its conversation
            self.remember(ref.conversation_id, ref.service_url)
        return ref

    async def ping(self, room: TeamsRoom, update: RequestUpdate, said: Phrase) -> None:
        """A message in the conversation naming people (by name where we know them)."""
        await self.post_text(room, said.render(PlainTextFormatter(self.people.name)))

    async def _post_or_fail(self, room: TeamsRoom, card: Mapping[str, Any]) -> CardRef:
        service_url = self.service_url(room)
        if service_url is None:
            log.error("no serviceUrl known for Teams conversation %s", room.conversation_id)
            raise ConnectorError("no serviceUrl is known for the Teams conversation")
        activity_id = await self.connector.send_or_fail(
            service_url, room.conversation_id, card_activity(card)
        )
        return CardRef(service_url, room.conversation_id, activity_id)

    async def _update(self, ref: CardRef, card: Mapping[str, Any]) -> bool:
        return await self.connector.update(
            ref.service_url, ref.conversation_id, ref.activity_id, card_activity(card)
        )

    async def find(self, address: Address) -> Addressee:
        """A door's address in Teams: a conversation this bridge has heard from (a bot may
        post only where it knows the conversation's serviceUrl), for anyone there or one
        person (`teams:<conversation>/<AAD object id>`)."""
        room = TeamsRoom(address.where)
        if address.surface != "teams" or self.service_url(room) is None:
            raise UnknownAddressError(
                f"no Teams conversation {address.where[:80]} known to this bridge: message the "
                "bot there first" if address.surface == "teams" else
                f"{address.where} cannot be looked up in Teams"
            )  # fmt: skip
        return Addressee(room.room_id, address.user)

    async def say(self, room_id: str, text: str) -> None:
        """The agent's words in a room of ours (a resumed run's: this process may not have
        heard from the conversation yet, so its serviceUrl may come from a stored card)."""
        room = parse_room(room_id)
        if room is None:
            return
        if self.service_url(room) is None:
            for record in await self.store.pending_in_room(room_id):
                ref = CardRef.of(record)
                if ref is not None:
                    self.remember(ref.conversation_id, ref.service_url)
                    break
        await self.post_text(room, text)

    async def post_text(self, room: TeamsRoom, text: str) -> None:
        """Post the agent's words in the conversation (the reply chain, in a channel)."""
        service_url = self.service_url(room)
        if service_url is None:
            log.error("no serviceUrl known for Teams conversation %s", room.conversation_id)
            return
        await self.connector.send(service_url, room.conversation_id, text_activity(text))
