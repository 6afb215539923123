"""Clicks and modal submissions: parsed, handed to the core's router, its outcome shown.

The router (bot/requests/router.py) decides everything: the request (read by the id the button
carries, on any worker), who may answer, which answer a control gives, whether it is valid, the
settle and the audit of a refused attempt. Here each outcome becomes Slack: a settled request
is edited by the surface (the core tells it), a refusal is a private note (or the modal turned
into one), a control that asks for a form opens a modal, invalid inputs are shown beside them.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.modals import notice_view, render_modal
from adapters.slack.parse import (
    Click,
    PayloadError,
    Submission,
    parse_block_action,
    parse_view_submission,
)
from adapters.slack.surface import SlackSurface, call_slack
from adapters.slack.text import SLACK, escape, truncate
from bot.human_input import RequestUpdate
from bot.requests.router import Invalid, NeedsForm, Refused, Router
from bot.requests.view import build_view

log = logging.getLogger(__name__)

Later = Callable[[Coroutine[Any, Any, None]], None]
"""Runs work after the ack has been sent (SlackAdapter._later)."""

_ERROR_TEXT = 150  # an inline modal error is one line under its input


class Interactions:
    """Bolt listeners for `hitl_*` actions and `hitl_modal:*` submissions."""

    def __init__(
        self, *, client: AsyncWebClient, surface: SlackSurface, router: Router, later: Later
    ) -> None:
        self.client = client
        self.surface = surface
        self.router = router
        self.later = later

    # -- buttons ----------------------------------------------------------------------------

    async def on_action(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Ack first (Slack allows 3 s); the click is handled after the response is sent."""
        await ack()
        self.later(self.on_click(body))

    async def on_click(self, body: dict[str, Any]) -> None:
        try:
            click = parse_block_action(body)
        except PayloadError as err:
            log.warning("ignored a block action: %s", err)
            return
        outcome = await self.router.handle(click.interaction)
        if isinstance(outcome, NeedsForm):
            await self._open_form(click, outcome)
        elif isinstance(outcome, Refused):
            await self._tell(click, outcome.notice.render(SLACK))
        elif isinstance(outcome, Invalid):
            await self._tell(click, "; ".join(escape(e) for e in outcome.errors.values()))
        # Settled: the core tells the surface, which edits the message.

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

    async def on_view(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """The router runs before the ack, so what is wrong shows in the modal itself."""
        try:
            submission = parse_view_submission(body)
        except PayloadError as err:
            log.warning("ignored a view submission: %s", err)
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
        else:  # Settled (a submission never needs another form): the modal closes
            await ack()


def modal_errors(outcome: Invalid, submission: Submission) -> dict[str, str]:
    """Errors by input block: a field's on its own, anything else on the first input."""
    fields = submission.fields
    errors: dict[str, str] = {}
    for key, message in outcome.errors.items():
        errors.setdefault(key if key in fields else fields[0], truncate(message, _ERROR_TEXT))
    return errors
