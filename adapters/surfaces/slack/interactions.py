"""Clicks and modal submissions: written down, parsed, handed to the core's router, its outcome
shown.

The router (bot/requests/router.py) decides everything: the request (read by the id the button
carries, on any worker), who may answer, which answer a control gives, whether it is valid, the
settle and the audit of a refused attempt. Here each outcome becomes Slack: a settled request
is edited by the surface (the core tells it), a refusal is a private note (or the modal turned
into one), a control that asks for a form opens a modal, invalid inputs are shown beside them.

Each interaction is written down (bot/durable/inbox.py) before it is acked, keyed by its signature:
a click acked is applied even if this worker dies the next millisecond (another worker's sweep,
or this one's restart, applies it), and a replay of the same signed request is acked and
ignored, silently (one line at most every few seconds in the log).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from adapters.serve.http_limits import LOG_EVERY, Throttled
from adapters.surfaces.slack.calls import call_slack
from adapters.surfaces.slack.messages import question_of, render_chosen
from adapters.surfaces.slack.modals import notice_view, render_modal
from adapters.surfaces.slack.parse import (
    Click,
    PayloadError,
    Submission,
    click_essentials,
    parse_block_action,
    parse_view_submission,
)
from adapters.surfaces.slack.scheme import SURFACE
from adapters.surfaces.slack.surface import SlackSurface
from adapters.surfaces.slack.text import SLACK, escape, truncate
from bot.durable.inbox import Inbox, InboxRows
from bot.human_input import RequestUpdate
from bot.requests.router import Invalid, NeedsForm, Outcome, Refused, Router, Settled
from bot.requests.view import build_view

log = logging.getLogger(__name__)

Later = Callable[[Coroutine[Any, Any, None]], None]
"""Runs work after the ack has been sent (SlackAdapter._later)."""

_ERROR_TEXT = 150  # an inline modal error is one line under its input
NOT_YOUR_WORDS = "This choice is for the person who wrote the message: their words, not yours."

INBOX_KEY = "hitl_inbox_key"
"""The Bolt context entry holding a request's inbox key (SlackAdapter.handle sets it)."""


def signed_key(signature: str) -> str:
    """The inbox key of a request signed `signature` (verified: a function of its timestamp
    and body). A replay of the request has the same; any other request, another."""
    return hashlib.sha256(signature.encode()).hexdigest()


def payload_key(body: Mapping[str, Any]) -> str:
    """The inbox key of an unsigned request (Socket Mode: the connection is authenticated):
    its payload's, which Slack makes unique (a click's trigger_id and action_ts)."""
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def inbox_key(context: Mapping[str, Any], body: Mapping[str, Any]) -> str:
    key = context.get(INBOX_KEY)
    return key if isinstance(key, str) else payload_key(body)


class Interactions:
    """Bolt listeners for `hitl_*` actions and `hitl_modal:*` submissions."""

    def __init__(
        self,
        *,
        client: AsyncWebClient,
        surface: SlackSurface,
        router: Router,
        later: Later,
        store: InboxRows,
    ) -> None:
        self.client = client
        self.surface = surface
        self.router = router
        self.later = later
        self.inbox = Inbox(store, SURFACE, self.reapply)
        self._replays = Throttled(log, LOG_EVERY)

    async def _received(self, key: str, payload: dict[str, Any] | None, kind: str) -> bool:
        """Written down; False (and a line, now and then) for a replay."""
        if await self.inbox.receive(key, payload):
            return True
        self._replays.warning("Slack: ignored a replayed %s (its signed request was seen "
                              "before)", kind)  # fmt: skip
        return False

    # -- buttons ----------------------------------------------------------------------------

    async def on_action(self, ack: AsyncAck, body: dict[str, Any], context: dict[str, Any]) -> None:
        """Written down, then acked (Slack allows 3 s); handled after the response is sent."""
        try:
            click = parse_block_action(body)
        except PayloadError as err:
            log.warning("ignored a block action: %s", err)
            await ack()
            return
        key = inbox_key(context, body)
        if not await self._received(key, click_essentials(body), "click"):
            await ack()
            return
        await ack()
        self.later(self._handle_click(key, click))

    async def _handle_click(self, key: str, click: Click) -> None:
        if not _own_words(click):
            self.inbox.applied(key)
            await self._tell(click, NOT_YOUR_WORDS)
            return
        try:
            outcome = await self.router.handle(click.interaction)
        except BaseException:
            self.inbox.abandoned(key)  # left for a sweep to apply
            raise
        self.inbox.applied(key)
        await self._show(click, outcome)
        await self._chosen(click, outcome)

    async def reapply(self, payload: dict[str, Any]) -> None:
        """A click acked by a worker that stopped before handling it: decided now. A settle
        edits the message as ever; nothing is said privately (a form's trigger has long
        expired, and a refusal may be of the click's own first, unrecorded, application)."""
        try:
            click = parse_block_action(payload)
        except PayloadError as err:
            log.warning("ignored a left-over block action: %s", err)
            return
        if not _own_words(click):
            return
        outcome = await self.router.handle(click.interaction)
        log.info("a left-over click on %s: %s", click.interaction.request_id,
                 type(outcome).__name__)  # fmt: skip
        await self._chosen(click, outcome)

    async def _show(self, click: Click, outcome: Outcome) -> None:
        """The outcome, to the person who clicked."""
        if isinstance(outcome, NeedsForm):
            await self._open_form(click, outcome)
        elif isinstance(outcome, Refused):
            await self._tell(click, outcome.notice.render(SLACK))
        elif isinstance(outcome, Invalid):
            await self._tell(click, "; ".join(escape(e) for e in outcome.errors.values()))
        # Settled, or Voted (the votes so far): the core tells the surface, which edits the
        # message everyone sees.

    async def _chosen(self, click: Click, outcome: Outcome) -> None:
        """A chooser's click that answered its request: the chooser says which, without
        buttons (the writer's words answered one request; they answer no other)."""
        if click.author is None or not isinstance(outcome, Settled):
            return
        if click.channel_id is None or click.message_ts is None:
            return
        record = outcome.record
        question = question_of(RequestUpdate.of(record), self.router.tools.get(record.tool_name))
        await self.surface.edit_message(click.channel_id, click.message_ts,
                                        render_chosen(question))  # fmt: skip

    async def _open_form(self, click: Click, outcome: NeedsForm) -> None:
        record = outcome.record
        tool = self.router.tools.get(record.tool_name)
        about = build_view(RequestUpdate.of(record), tool, live=False).facts
        modal = render_modal(outcome.form, click.interaction.verb, record.id, intro=about)
        await call_slack(
            lambda: self.client.views_open(trigger_id=click.trigger_id, view=modal),
            "views.open",
            attempts=1,  # a trigger_id is good once, for 3 s: a retry cannot succeed
        )

    async def _tell(self, click: Click, text: str) -> None:
        if click.channel_id:
            user = click.interaction.user_id
            await self.surface.tell(click.channel_id, user, text, click.thread_ts)

    # -- modals -------------------------------------------------------------------------------

    async def on_view(self, ack: AsyncAck, body: dict[str, Any], context: dict[str, Any]) -> None:
        """The router runs before the ack, so what is wrong shows in the modal itself; a crash
        before the ack is an error Slack shows the person. A replay is acked and ignored."""
        try:
            submission = parse_view_submission(body)
        except PayloadError as err:
            log.warning("ignored a view submission: %s", err)
            await ack()
            return
        if not await self._received(inbox_key(context, body), None, "modal submission"):
            await ack()
            return
        outcome = await self.router.handle(submission.interaction)
        if isinstance(outcome, Invalid) and submission.fields:
            await ack(response_action="errors", errors=modal_errors(outcome, submission))
        elif isinstance(outcome, Invalid):
            text = "; ".join(escape(e) for e in outcome.errors.values())
            await ack(response_action="update", view=notice_view(text))
        elif isinstance(outcome, Refused):
            await ack(response_action="update", view=notice_view(outcome.notice.render(SLACK)))
        else:  # Settled or Voted (a submission never needs another form): the modal closes
            await ack()


def _own_words(click: Click) -> bool:
    """A chooser's button answers with its writer's words: only they may click it (anyone
    else could otherwise answer, in their own name, with what someone else wrote)."""
    return click.author is None or click.author == click.interaction.user_id


def modal_errors(outcome: Invalid, submission: Submission) -> dict[str, str]:
    """Errors by input block: a field's on its own, anything else on the first input."""
    fields = submission.fields
    errors: dict[str, str] = {}
    for key, message in outcome.errors.items():
        errors.setdefault(key if key in fields else fields[0], truncate(message, _ERROR_TEXT))
    return errors
