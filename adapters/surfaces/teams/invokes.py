"""`adaptiveCard/action` invokes: refreshes and answers, each answered with the card to show.

Teams waits 5 s for the response (and retries twice), so an invoke does its work before it
responds and nothing more: the action is read into an `Interaction` and the core's router
decides (who may answer, the answer, its validation, the settle, the audit of a refusal, the
words of every notice); we draw its outcome. The card update every other viewer sees is the
surface's (an observer of the settle), not ours.

- `hitl_refresh` (automatic, for the users in `refresh.userIds`, or a manual click): the live
  card for whoever may answer a pending request, the read-only one for anyone else (told why,
  when they clicked themselves).
- Settled: the settled card. Voted: the card with the votes so far, read-only for the voter
  (one vote each). Refused: the honest card with the notice (read-only for someone who may not
  answer). Invalid: the live card, the form open with the person's values and the errors next
  to their fields. NeedsForm: the live card with that form open. An open request several
  people decide shows the votes so far on every card drawn of it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from adapters.surfaces.teams.actions import ActionError, CardAction, interaction, parse_action
from adapters.surfaces.teams.connector import CARD_CONTENT_TYPE
from adapters.surfaces.teams.inputs import Filled
from adapters.surfaces.teams.surface import CardRef, People, TeamsSurface
from bot import RequestUpdate
from bot.records import RequestRecord, RequestStatus
from bot.requests import wording
from bot.requests.kinds import Verb
from bot.requests.router import (
    Invalid,
    NeedsForm,
    Outcome,
    Refusal,
    Router,
    Settled,
    Voted,
)
from bot.words.phrases import Phrase

log = logging.getLogger(__name__)

MESSAGE_CONTENT_TYPE = "application/vnd.microsoft.activity.message"
ERROR_CONTENT_TYPE = "application/vnd.microsoft.error"


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

    def __init__(self, *, surface: TeamsSurface, router: Router, people: People) -> None:
        self.surface = surface
        self.router = router
        self.people = people

    async def on_action(self, activity: Mapping[str, Any]) -> dict[str, Any]:
        """The response body for one `adaptiveCard/action` invoke activity."""
        user, teams_user_id, name = sender_of(activity)
        if not user:
            return error_response("the invoke names no sender")
        self.people.learn(user, teams_user_id, name)
        conversation = activity.get("conversation") or {}
        self.surface.remember(str(conversation.get("id") or ""), activity.get("serviceUrl"))
        try:
            action = parse_action(activity.get("value"))
        except ActionError as err:
            log.warning("ignored an adaptiveCard/action invoke: %s", err)
            return error_response(str(err))
        record = await self.router.load(action.request_id)
        if record is None:
            return message_response(wording.UNKNOWN.plain)
        if action.verb is None:  # a refresh
            return await self._refreshed(record, action, user, teams_user_id)
        form = self.router.form_for(record, action.verb)
        person = interaction(
            action, form, user_id=user, teams_user_id=teams_user_id, name=self.people.name(user)
        )
        return await self._drawn(await self.router.handle(person, record), action, user)

    async def _refreshed(
        self, record: RequestRecord, action: CardAction, user: str, teams_user_id: str
    ) -> dict[str, Any]:
        pending = record.status is RequestStatus.PENDING
        verdict = await self.router.verdict(record, user, (teams_user_id,))
        told = pending and action.trigger == "manual" and not verdict.allowed
        notice = verdict.notice if told else None
        update = await self.router.update(record)
        return self._card(record, update, user, live=pending and verdict.allowed, notice=notice)

    async def _drawn(self, outcome: Outcome, action: CardAction, user: str) -> dict[str, Any]:
        if isinstance(outcome, Settled):
            return self._card(outcome.record, RequestUpdate.of(outcome.record), user, live=False)
        if isinstance(outcome, Voted):
            update = await self.router.update(outcome.record, outcome.tally)
            return self._card(outcome.record, update, user, live=False)
        if outcome.record is None:  # unknown by now
            return message_response(outcome.notice.plain)
        record = outcome.record
        update = await self.router.update(record)  # with the votes so far, if it takes them
        if isinstance(outcome, Invalid):
            filled = Filled(values=action.data, errors=outcome.errors)
            return self._card(record, update, user, live=True, open=action.verb, filled=filled)
        if isinstance(outcome, NeedsForm):
            return self._card(record, update, user, live=True, open=action.verb)
        # Only someone who may answer, of a request still open, keeps the controls.
        live = outcome.reason in (Refusal.UNFIT, Refusal.UNAVAILABLE)
        return self._card(record, update, user, live=live, notice=outcome.notice)

    def _card(
        self,
        record: RequestRecord,
        update: RequestUpdate,
        viewer: str,
        *,
        live: bool,
        notice: Phrase | None = None,
        open: Verb | None = None,
        filled: Filled | None = None,
    ) -> dict[str, Any]:
        card = self.surface.render(
            update,
            live=live,
            ref=CardRef.of(record),
            viewer=viewer,
            notice=notice,
            open=open,
            filled=filled,
        )
        return card_response(card)
