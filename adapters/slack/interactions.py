"""Clicks and modal submissions: who clicked, may they, and what does it settle.

The request is read from the store by the id the button carries, so a click lands the same on
any worker and after a restart. Permission is checked at click time; a refused attempt gets a
private reply and an audit row. A click on a settled request settles nothing and says why.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.parse import (
    ButtonClick,
    ModalSubmission,
    PayloadError,
    answer_from_click,
    answer_from_submission,
    parse_block_action,
    parse_view_submission,
)
from adapters.slack.render import MODAL_OF_VERB, mention, render_modal, slack_date
from adapters.slack.surface import SURFACE, SlackSurface, call_slack
from bot import HumanInputHandler, HumanTool, PendingInputStatus, RequestUpdate
from bot.access import AnswerPolicy
from bot.audit import record_refused_answer
from bot.records import RequestRecord, RequestStore
from bot.stored_requests import settled_record

log = logging.getLogger(__name__)

HandlerLookup = Callable[[str], HumanInputHandler | None]
Later = Callable[[Coroutine[Any, Any, None]], None]
"""Runs work after the ack has been sent (SlackAdapter._later)."""


def settled_notice(record: RequestRecord) -> str:
    """An honest private reply to a click on a request that is no longer open."""
    who = f" by {mention(record.settled_by)}" if record.settled_by else ""
    when = f" {slack_date(record.settled_at)}" if record.settled_at else ""
    if record.status is PendingInputStatus.RESOLVED:
        return f"This request was already answered{who}{when}."
    if record.status is PendingInputStatus.REJECTED:
        return f"This request was already rejected{who}{when}."
    if record.status is PendingInputStatus.TIMED_OUT:
        deadline = slack_date(record.expires_at) if record.expires_at else "its deadline"
        return f"This request expired at {deadline}."
    if record.status is PendingInputStatus.PENDING:  # another answer is being recorded
        return "This request is being answered by someone else right now."
    return "This request was withdrawn."


def not_yours_notice(record: RequestRecord) -> str:
    owner = mention(record.actor_id) if record.actor_id else "someone else"
    return f"This request is for {owner}: only they, an approver or an admin can answer it."


class Interactions:
    """Bolt listeners for `hitl_*` actions and `hitl_modal:*` submissions."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        surface: SlackSurface,
        store: RequestStore,
        policy: AnswerPolicy,
        handler_for: HandlerLookup,
        tools: Mapping[str, HumanTool],
        later: Later,
    ) -> None:
        self.client = client
        self.surface = surface
        self.store = store
        self.policy = policy
        self.handler_for = handler_for
        self.tools = tools
        self.later = later

    # -- buttons ----------------------------------------------------------------------------

    async def on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Ack first (Slack allows 3 s); the click is handled after the response is sent."""
        await ack()
        self.later(self.on_click(body))

    async def on_click(self, body: dict[str, Any]) -> None:
        """Look the request up and act on the click."""
        try:
            click = parse_block_action(body)
        except PayloadError as err:
            log.warning("ignored a block action: %s", err)
            return
        record = await self._open_request(click.request_id, click.user_id, click)
        if record is None:
            return
        try:
            answer = answer_from_click(click, record.arguments, record.tool_name)
        except PayloadError as err:
            await self._tell(click, f"That button does not fit this request ({err}).")
            return
        if answer is None:
            await self._open_modal(click, record)
            return
        await self._settle(record, answer, click.user_id, click)

    async def _open_request(
        self, request_id: str, user_id: str, click: ButtonClick
    ) -> RequestRecord | None:
        """The request if it is open and `user_id` may answer it; else a private reply."""
        record = await self.store.get_request(request_id)
        if record is None:
            await self._tell(click, "This request is no longer known.")
            return None
        if record.status is not PendingInputStatus.PENDING:
            await self._tell(click, settled_notice(record))
            return None
        if not self.policy.may_answer(user_id, record.actor_id):
            await record_refused_answer(self.store, record, user_id, SURFACE)
            await self._tell(click, not_yours_notice(record))
            return None
        return record

    async def _open_modal(self, click: ButtonClick, record: RequestRecord) -> None:
        kind = MODAL_OF_VERB[click.verb]
        view = render_modal(kind, RequestUpdate.of(record), self.tools.get(record.tool_name))
        await call_slack(
            lambda: self.client.views_open(trigger_id=click.trigger_id, view=view),
            "views.open",
            attempts=1,  # a trigger_id is good once, for 3 s: a retry cannot succeed
        )

    async def _settle(
        self, record: RequestRecord, answer: str, user_id: str, click: ButtonClick | None
    ) -> None:
        handler = self.handler_for(record.channel_id)
        if handler is None:
            log.error("no handler for channel %s of request %s", record.channel_id, record.id)
            return
        if await handler.answer(record.id, answer, by=user_id):
            return
        if click is None:
            return
        latest = await settled_record(self.store, record.id)
        if latest is not None:
            await self._tell(click, settled_notice(latest))

    async def _tell(self, click: ButtonClick, text: str) -> None:
        if click.channel_id:
            await self.surface.tell(click.channel_id, click.user_id, text, click.thread_ts)

    # -- modals -------------------------------------------------------------------------------

    async def on_view(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Validate before the ack, so errors show in the modal; settle after it."""
        try:
            submission = parse_view_submission(body)
        except PayloadError as err:
            log.warning("ignored a view submission: %s", err)
            await ack()
            return
        record = await self.store.get_request(submission.request_id)
        problem = await self._submission_problem(record, submission)
        if problem is not None or record is None:
            await ack(response_action="update", view=_notice_view(problem or "Unknown request"))
            return
        tool = self.tools.get(record.tool_name)
        answer = answer_from_submission(submission, record.arguments, tool)
        if isinstance(answer, dict):
            await ack(response_action="errors", errors=answer)
            return
        await ack()
        self.later(self._settle(record, answer, submission.user_id, None))

    async def _submission_problem(
        self, record: RequestRecord | None, submission: ModalSubmission
    ) -> str | None:
        if record is None:
            return "This request is no longer known."
        if record.status is not PendingInputStatus.PENDING:
            return _plain(settled_notice(record))
        if not self.policy.may_answer(submission.user_id, record.actor_id):
            await record_refused_answer(self.store, record, submission.user_id, SURFACE)
            return _plain(not_yours_notice(record))
        return None


def _plain(text: str) -> str:
    """Modal text is plain_text here: drop Slack's markup for a readable sentence."""
    text = re.sub(r"<!date\^\d+\^[^|]*\|([^>]*)>", r"\1", text)
    return re.sub(r"<@([A-Z0-9]+)>", r"@\1", text)


def _notice_view(text: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": "Request closed"},
        "close": {"type": "plain_text", "text": "Close"},
        "blocks": [{"type": "section", "text": {"type": "plain_text", "text": text[:3000]}}],
    }
