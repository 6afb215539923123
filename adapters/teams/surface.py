"""The Teams surface: posts each request's card in its conversation and updates it in place.

The card in the conversation is always the read-only one; its `refresh.userIds` (the actor,
and the approvers and admins we know, at most 60) make their Teams clients fetch the live card
with an automatic `adaptiveCard/action` refresh (see invokes.py). Every transition updates the
activity in place (PUT), so a settled request never keeps live controls.

Updates of one request are shown in order (a lock per tool call); a failed Bot Connector call is
retried (429 honouring Retry-After, 5xx and dropped connections, with backoff) and, if it still
fails, logged as an error: never dropped silently.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import httpx
from microsoft_teams.api import ApiClient
from microsoft_teams.api.activities.message import MessageActivityInput
from microsoft_teams.api.models.attachment import Attachment

from adapters.teams.cards import render_card
from bot import HumanTool, RenderState, RequestUpdate
from bot.records import RequestRecord, RequestStore
from bot.stored_requests import posted_record

log = logging.getLogger(__name__)

T = TypeVar("T")

SURFACE = "teams"
PREFIX = "teams:"
THREAD_MARK = ";messageid="
CARD_CONTENT_TYPE = "application/vnd.microsoft.card.adaptive"
MAX_REFRESH_USERS = 60  # Teams refreshes automatically for at most 60 users
TEXT_LIMIT = 20_000  # well inside Teams' ~28 KB limit for a whole message
ATTEMPTS = 4
MAX_RETRY_AFTER = 10.0  # seconds: wait no longer than this for a 429's Retry-After
ENDINGS = frozenset({RenderState.COMPLETE, RenderState.REJECTED, RenderState.EXPIRED,
                     RenderState.CANCELLED})  # fmt: skip


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


def is_teams_user_id(value: str) -> bool:
    """A Teams user id as activities carry it in `from.id` ("29:…", "8:orgid:…"), which
    `refresh.userIds` lists; an AAD object id is a bare GUID."""
    return value.startswith(("29:", "8:"))


# -- people -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Person:
    aad_object_id: str
    user_id: str  # the Bot Framework id ("29:…"): what `refresh.userIds` lists
    name: str | None


class People:
    """Who we have heard from, by AAD object id (the id the core's actors and answers use)."""

    def __init__(self) -> None:
        self._people: dict[str, Person] = {}

    def learn(self, aad_object_id: str, user_id: str, name: str | None) -> None:
        known = self._people.get(aad_object_id)
        if known is not None:
            user_id, name = user_id or known.user_id, name or known.name
        self._people[aad_object_id] = Person(aad_object_id, user_id, name)

    def name(self, aad_object_id: str | None) -> str | None:
        person = self._people.get(aad_object_id) if aad_object_id else None
        return person.name if person else None

    def user_id(self, aad_object_id: str | None) -> str | None:
        person = self._people.get(aad_object_id) if aad_object_id else None
        return person.user_id if person and person.user_id else None


# -- the Bot Connector --------------------------------------------------------------------------


async def call_connector(
    call: Callable[[], Awaitable[T]], what: str, *, idempotent: bool, attempts: int = ATTEMPTS
) -> T | None:
    """Run a Bot Connector call, retrying 429 (after Retry-After), 5xx and connection errors
    with backoff; None (logged as an error) if it never succeeded.

    A call that is not idempotent (a POST) is sent again only when it surely never arrived
    (the connection was not made): a timed-out post may have landed, and a second would show
    the message twice."""
    for attempt in range(attempts):
        delay = 0.2 * 2**attempt
        try:
            return await call()
        except httpx.HTTPStatusError as err:
            status = err.response.status_code
            if (status != 429 and status < 500) or attempt == attempts - 1:
                log.error("Bot Connector %s failed: HTTP %d %s", what, status, err.response.text)
                return None
            retry_after = _retry_after(err.response) if status == 429 else None
            if retry_after is not None:
                delay = retry_after
        except httpx.TransportError as err:
            unsent = isinstance(err, httpx.ConnectError | httpx.ConnectTimeout)
            if attempt == attempts - 1 or not (idempotent or unsent):
                log.error("Bot Connector %s failed: %r", what, err)
                return None
        except Exception:  # a token that could not be had, a response we cannot read
            log.exception("Bot Connector %s failed", what)
            return None
        await asyncio.sleep(delay)
    return None


def _retry_after(response: httpx.Response) -> float | None:
    """Retry-After in seconds (a number or an HTTP date), capped; None if absent or bad."""
    value = response.headers.get("retry-after", "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            seconds = email.utils.parsedate_to_datetime(value).timestamp() - time.time()
        except (TypeError, ValueError):
            return None
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


class Connector:
    """Posts and updates activities through the SDK's ApiClient, one per `serviceUrl`."""

    def __init__(self, client_for: Callable[[str], ApiClient]) -> None:
        self._client_for = client_for
        self._clients: dict[str, ApiClient] = {}

    def client(self, service_url: str) -> ApiClient:
        key = service_url.rstrip("/")
        client = self._clients.get(key)
        if client is None:
            client = self._clients[key] = self._client_for(key)
        return client

    async def send(
        self, service_url: str, conversation_id: str, activity: MessageActivityInput
    ) -> str | None:
        """POST /v3/conversations/{id}/activities; the new activity's id, or None."""
        conversations = self.client(service_url).conversations
        sent = await call_connector(
            lambda: conversations.create_activity(conversation_id, activity),
            "send activity",
            idempotent=False,
        )
        return sent.id if sent is not None else None

    async def update(
        self,
        service_url: str,
        conversation_id: str,
        activity_id: str,
        activity: MessageActivityInput,
    ) -> bool:
        """PUT /v3/conversations/{id}/activities/{activityId}; whether it succeeded."""
        conversations = self.client(service_url).conversations
        updated = await call_connector(
            lambda: conversations.update_activity(conversation_id, activity_id, activity),
            "update activity",
            idempotent=True,
        )
        return updated is not None


def card_activity(card: Mapping[str, Any]) -> MessageActivityInput:
    return MessageActivityInput(
        attachments=[Attachment(content_type=CARD_CONTENT_TYPE, content=dict(card))]
    )


def text_activity(text: str) -> MessageActivityInput:
    """The agent's words as plain text: the model cannot format a link to hide where it goes."""
    if len(text) > TEXT_LIMIT:
        text = text[: TEXT_LIMIT - 1] + "…"
    return MessageActivityInput(text=text, text_format="plain")


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
        ref = record.message_refs.get(SURFACE)
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
    """Observer of the core's requests for rooms that are Teams conversations."""

    def __init__(
        self,
        connector: Connector,
        store: RequestStore,
        tools: Mapping[str, HumanTool],
        people: People,
        deciders: Iterable[str] = (),
    ) -> None:
        self.connector = connector
        self.store = store
        self.tools = tools
        self.people = people
        # Approvers and admins (AAD object ids, or Teams user ids): they get the live card too.
        self.deciders = tuple(sorted(set(deciders)))
        self._service_urls: dict[str, str] = {}  # base conversation id -> serviceUrl
        self._locks: dict[str, asyncio.Lock] = {}
        self._preparing: dict[str, CardRef] = {}  # tool_call_id -> the "Preparing…" card
        self._posted: dict[str, CardRef] = {}  # pending_id -> the request's card

    # -- what we learn from incoming activities

    def remember(self, conversation_id: str, service_url: str | None) -> None:
        """The serviceUrl to reach a conversation: proactive posts and updates need it."""
        if conversation_id and service_url:
            self._service_urls[base_conversation_id(conversation_id)] = service_url

    def service_url(self, room: TeamsRoom) -> str | None:
        return self._service_urls.get(room.base_id)

    def refresh_user_ids(self, actor_id: str | None) -> tuple[str, ...]:
        """Who gets the live card by automatic refresh (Teams wants their Teams user ids, not
        AAD object ids): the actor, then the approvers and admins configured by Teams user id
        or whose id we learned from an activity of theirs; at most 60."""
        ids: list[str] = []
        for who in (actor_id, *self.deciders):
            user_id = who if who and is_teams_user_id(who) else self.people.user_id(who)
            if user_id and user_id not in ids:
                ids.append(user_id)
        return tuple(ids[:MAX_REFRESH_USERS])

    # -- rendering, shared with the invokes

    def render(
        self,
        update: RequestUpdate,
        *,
        live: bool,
        ref: CardRef | None = None,
        error: str | Mapping[str, str] | None = None,
        values: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        """The card for `update`: live (inputs and buttons) or read-only. A pending request's
        card keeps its refresh clause (its deciders get the live card), a settled one has none.
        `error` and `values` (what the person entered) are shown on it, see `render_card`."""
        pending = update.state is RenderState.EXECUTING
        user_ids = (ref.user_ids if ref else ()) or self.refresh_user_ids(update.actor_id)
        return render_card(
            update,
            self.tools.get(update.tool_name),
            live=live and pending,
            refresh_user_ids=user_ids if pending else (),
            actor_name=self.people.name(update.actor_id) or (ref.actor_name if ref else None),
            answered_by_name=self.people.name(update.settled_by),
            error=error,
            values=values,
        )

    # -- the observer

    async def observe(self, update: RequestUpdate) -> None:
        room = parse_room(update.room_id)
        if room is None:
            return
        key = update.tool_call_id or update.pending_id
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            await self._show(update, room)
        if update.state in ENDINGS and not lock.locked():
            self._locks.pop(key, None)

    async def _show(self, update: RequestUpdate, room: TeamsRoom) -> None:
        if update.state is RenderState.IN_PROGRESS:
            ref = await self._post(room, self.render(update, live=False))
            if ref is not None:
                self._preparing[update.tool_call_id] = ref
            return
        if update.state is RenderState.EXECUTING:
            await self._show_request(update, room)
            return
        if not update.pending_id:  # announced, never asked (refused, or the turn was cut)
            preparing = self._preparing.pop(update.tool_call_id, None)
            if preparing is not None:
                await self._update(preparing, self.render(update, live=False))
            return
        ref = self._posted.pop(update.pending_id, None) or await self._stored_ref(update)
        if ref is None:
            log.error("no Teams card to update for request %s", update.pending_id)
            return
        await self._update(ref, self.render(update, live=False, ref=ref))

    async def _show_request(self, update: RequestUpdate, room: TeamsRoom) -> None:
        """Turn the "Preparing…" card into the request's, or post it; remember where.

        A request with no actor is anyone's in the conversation: its card is posted live."""
        card = self.render(update, live=update.actor_id is None)
        preparing = self._preparing.pop(update.tool_call_id, None) if update.tool_call_id else None
        posted: CardRef | None = None
        if preparing is not None and await self._update(preparing, card):
            posted = preparing
        else:
            posted = await self._post(room, card)
        if posted is None:
            return
        ref = CardRef(
            posted.service_url,
            posted.conversation_id,
            posted.activity_id,
            self.refresh_user_ids(update.actor_id),
            self.people.name(update.actor_id),
        )
        self._posted[update.pending_id] = ref
        await self.store.set_message_ref(update.pending_id, SURFACE, ref.to_json())

    async def _stored_ref(self, update: RequestUpdate) -> CardRef | None:
        record = await posted_record(self.store, update.pending_id, SURFACE)
        return CardRef.of(record) if record is not None else None

    async def _post(self, room: TeamsRoom, card: Mapping[str, Any]) -> CardRef | None:
        service_url = self.service_url(room)
        if service_url is None:
            log.error("no serviceUrl known for Teams conversation %s", room.conversation_id)
            return None
        activity_id = await self.connector.send(
            service_url, room.conversation_id, card_activity(card)
        )
        if activity_id is None:
            return None
        return CardRef(service_url, room.conversation_id, activity_id)

    async def _update(self, ref: CardRef, card: Mapping[str, Any]) -> bool:
        return await self.connector.update(
            ref.service_url, ref.conversation_id, ref.activity_id, card_activity(card)
        )

    async def post_text(self, room: TeamsRoom, text: str) -> None:
        """Post the agent's words in the conversation (the reply chain, in a channel)."""
        service_url = self.service_url(room)
        if service_url is None:
            log.error("no serviceUrl known for Teams conversation %s", room.conversation_id)
            return
        await self.connector.send(service_url, room.conversation_id, text_activity(text))
