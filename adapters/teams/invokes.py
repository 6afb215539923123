"""`adaptiveCard/action` invokes: refreshes and answers, each answered with the card to show.

Teams waits 5 s for the response (and retries twice), so an invoke does its work before it
responds and nothing more: read the request from the store by the id the action carries,
check who acts, settle (one conditional UPDATE) and render. The card update every other viewer
sees is the surface's (an observer of the settle), not ours.

- `hitl_refresh` (automatic, for the users in `refresh.userIds`, or a manual click): the live
  card for whoever may answer a pending request, the read-only one for anyone else.
- An answer from someone who may not answer: the read-only card with a note, and an
  `answer_refused` audit row. Invalid inputs: the live card with the errors shown. An answer
  to a settled request (a double submit, an answer after expiry): the honest settled card.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from adapters.teams.actions import (
    ActionError,
    CardAction,
    Decline,
    answer_from_action,
    parse_action,
)
from adapters.teams.cards import Verb
from adapters.teams.surface import CARD_CONTENT_TYPE, SURFACE, CardRef, People, TeamsSurface
from bot import AnswerInvalidError, HumanInputHandler, HumanTool, PendingInputStatus, RequestUpdate
from bot.access import AnswerPolicy
from bot.audit import record_refused_answer
from bot.records import RequestRecord, RequestStore
from bot.stored_requests import settled_record

log = logging.getLogger(__name__)

HandlerLookup = Callable[[str], HumanInputHandler | None]
MESSAGE_CONTENT_TYPE = "application/vnd.microsoft.activity.message"
ERROR_CONTENT_TYPE = "application/vnd.microsoft.error"
SETTLE_WAIT = 2.0  # how long an answer that lost a race waits to learn who won (of Teams' 5 s)


def card_response(card: Mapping[str, Any]) -> dict[str, Any]:
    """The invoke response that replaces the card the user sees."""
    return {"statusCode": 200, "type": CARD_CONTENT_TYPE, "value": dict(card)}


def message_response(text: str) -> dict[str, Any]:
    """The invoke response that shows the user a short message instead of a new card."""
    return {"statusCode": 200, "type": MESSAGE_CONTENT_TYPE, "value": text}


def error_response(message: str) -> dict[str, Any]:
    """The invoke response for an action we cannot read (HTTP 200, statusCode 400)."""
    return {
        "statusCode": 400,
        "type": ERROR_CONTENT_TYPE,
        "value": {"code": "BadRequest", "message": message},
    }


def sender_of(activity: Mapping[str, Any]) -> tuple[str, str, str | None]:
    """(AAD object id, Teams user id, name) of who sent an activity."""
    sender = activity.get("from") or {}
    user_id = str(sender.get("id") or "")
    return str(sender.get("aadObjectId") or user_id), user_id, sender.get("name")


class Invokes:
    """Answers `adaptiveCard/action` invokes."""

    def __init__(
        self,
        *,
        surface: TeamsSurface,
        store: RequestStore,
        policy: AnswerPolicy,
        handler_for: HandlerLookup,
        tools: Mapping[str, HumanTool],
        people: People,
    ) -> None:
        self.surface = surface
        self.store = store
        self.policy = policy
        self.handler_for = handler_for
        self.tools = tools
        self.people = people

    async def on_action(self, activity: Mapping[str, Any]) -> dict[str, Any]:
        """The response body for one `adaptiveCard/action` invoke activity."""
        user, user_id, name = sender_of(activity)
        if not user:
            return error_response("the invoke names no sender")
        self.people.learn(user, user_id, name)
        conversation = activity.get("conversation") or {}
        self.surface.remember(str(conversation.get("id") or ""), activity.get("serviceUrl"))
        try:
            action = parse_action(activity.get("value"))
        except ActionError as err:
            log.warning("ignored an adaptiveCard/action invoke: %s", err)
            return error_response(str(err))
        record = await self.store.get_request(action.request_id)
        if record is None:
            return message_response("This request is no longer known.")
        if action.verb is Verb.REFRESH:
            return self._refreshed(record, user, user_id, manual=action.trigger != "automatic")
        return await self._answered(record, action, user, user_id)

    def _may_answer(self, record: RequestRecord, user: str, user_id: str) -> bool:
        """The actor, or an approver or admin (configured by AAD object id or Teams user id)."""
        actor = record.actor_id
        return self.policy.may_answer(user, actor) or (
            bool(user_id) and self.policy.may_answer(user_id, actor)
        )

    # -- refresh ----------------------------------------------------------------------------

    def _refreshed(
        self, record: RequestRecord, user: str, user_id: str, *, manual: bool
    ) -> dict[str, Any]:
        pending = record.status is PendingInputStatus.PENDING
        may_answer = self._may_answer(record, user, user_id)
        note = self._not_yours(record) if pending and manual and not may_answer else None
        return self._card(record, live=pending and may_answer, error=note)

    # -- answers ----------------------------------------------------------------------------

    async def _answered(
        self, record: RequestRecord, action: CardAction, user: str, user_id: str
    ) -> dict[str, Any]:
        if record.status is not PendingInputStatus.PENDING:
            return self._card(record, live=False, error=self._settled_notice(record))
        if not self._may_answer(record, user, user_id):
            await record_refused_answer(
                self.store, record, user, SURFACE, name=self.people.name(user)
            )
            return self._card(record, live=False, error=self._not_yours(record))
        tool = self.tools.get(record.tool_name)
        try:
            outcome = answer_from_action(action, record.arguments, tool)
        except ActionError as err:
            return self._card(record, live=True, error=f"That action does not fit ({err}).")
        if outcome is None:  # the action only asks for the live card again
            return self._card(record, live=True, values=action.inputs)
        if isinstance(outcome, dict):  # inputs that do not validate: show what is wrong
            return self._card(record, live=True, error=outcome, values=action.inputs)
        handler = self.handler_for(record.channel_id)
        if handler is None:
            log.error("no handler for channel %s of request %s", record.channel_id, record.id)
            return message_response("This request cannot be answered right now.")
        try:
            if isinstance(outcome, Decline):
                won = await handler.decline(record.id, outcome.reason or "", by=user)
            else:
                won = await handler.answer(record.id, outcome, by=user)
        except AnswerInvalidError as err:
            return self._card(record, live=True, error=str(err), values=action.inputs)
        latest = await settled_record(self.store, record.id, patience=SETTLE_WAIT)
        if latest is None:
            return message_response("This request is no longer known.")
        return self._card(latest, live=False, error=None if won else self._settled_notice(latest))

    # -- cards and notes --------------------------------------------------------------------

    def _card(
        self,
        record: RequestRecord,
        *,
        live: bool,
        error: str | Mapping[str, str] | None = None,
        values: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        update = RequestUpdate.of(record)
        ref = CardRef.of(record)
        card = self.surface.render(update, live=live, ref=ref, error=error, values=values)
        return card_response(card)

    def _name(self, aad_object_id: str | None, record: RequestRecord) -> str | None:
        if aad_object_id is None:
            return None
        ref = CardRef.of(record)
        fallback = ref.actor_name if ref and aad_object_id == record.actor_id else None
        return self.people.name(aad_object_id) or fallback

    def _not_yours(self, record: RequestRecord) -> str:
        owner = self._name(record.actor_id, record) or "someone else"
        return f"This request is for {owner}: only they, an approver or an admin can answer it."

    def _settled_notice(self, record: RequestRecord) -> str:
        """An honest note on an answer to a request that is no longer open."""
        who = self._name(record.settled_by, record)
        by = f" by {who}" if who else ""
        when = f" at {_time(record.settled_at)}" if record.settled_at else ""
        if record.status is PendingInputStatus.RESOLVED:
            return f"This request was already answered{by}{when}."
        if record.status is PendingInputStatus.REJECTED:
            return f"This request was already rejected{by}{when}."
        if record.status is PendingInputStatus.TIMED_OUT:
            deadline = _time(record.expires_at) if record.expires_at else "its deadline"
            return f"This request expired at {deadline}."
        if record.status is PendingInputStatus.PENDING:  # another answer is being recorded
            return "This request is being answered by someone else right now."
        return "This request was withdrawn."


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
