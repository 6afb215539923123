"""Stopping a running turn from Slack: its Stop button (in the streamed reply) or `/hitl stop`
typed in its channel. The core decides who may (bot/bridge/turns.py: the turn's person, its
approvers, admins), withdraws its open requests and audits the stop; the stream then closes
with "Stopped by <@…>". Whoever may not is told so privately, in one line.

A stop that lands on a worker not running the turn asks the one running it, through the run's
row (bot/bridge/turns.py): the turn stops within a lease renewal, and the person is told so.
Slack does not say which thread `/hitl stop` was typed in: it stops the channel's one running
turn (on any worker), or the typist's own if several run.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Coroutine
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck

from adapters.surfaces.slack.conversations import SlackConversations
from adapters.surfaces.slack.parse import PayloadError, StopClick, parse_stop_click
from bot.bridge.turns import StopResult

log = logging.getLogger(__name__)

NOT_YOURS = "Only the person who started this run, its approvers or an admin can stop it."
NOT_HERE = "That run is not going on any more."
ASKED = "Stopping: the run is on another worker of the bridge, which stops it in a few seconds."
NONE_IN_CHANNEL = "No run of mine is going on in this channel."
SEVERAL = "Several runs are going on in this channel: use the Stop button of the one to stop."
STOPPED = "Stopped."
ANSWERS = {
    StopResult.NOT_YOURS: NOT_YOURS,
    StopResult.NOT_RUNNING: NOT_HERE,
    StopResult.ASKED: ASKED,
}


class RunStops:
    """The Stop button's listener and `/hitl stop`."""

    def __init__(
        self,
        conversations: SlackConversations,
        later: Callable[[Coroutine[Any, Any, None]], None],
    ) -> None:
        self.conversations = conversations
        self.later = later

    async def on_click(self, ack: AsyncAck, body: dict[str, Any]) -> None:
        """Acked at once; the stop (store writes, edits) runs after the ack."""
        await ack()
        try:
            click = parse_stop_click(body)
        except PayloadError as err:
            log.warning("ignored a Stop click: %s", err)
            return
        self.later(self._clicked(click))

    async def _clicked(self, click: StopClick) -> None:
        result = await self.conversations.stop(click.room_id, click.user_id)
        notice = ANSWERS.get(result)
        if notice is not None and click.channel_id:
            await self.conversations.surface.tell(
                click.channel_id, click.user_id, notice, click.thread_ts
            )

    async def command(self, channel: str, user: str) -> None:
        """`/hitl stop`: Slack does not say which thread a command was typed in, so the run
        meant is the one going on in the channel (theirs, if several are). Answered
        privately, after the ack."""
        await self.conversations.surface.tell(channel, user, await self._stop_in(channel, user))

    async def _stop_in(self, channel: str, user: str) -> str:
        running = await self.conversations.runs_in(channel)
        theirs = [room for room, actor in running.items() if actor == user]
        if len(theirs) == 1 or len(running) == 1:
            room_id = theirs[0] if len(theirs) == 1 else next(iter(running))
            result = await self.conversations.stop(room_id, user)
            return ANSWERS.get(result, STOPPED)
        return SEVERAL if running else NONE_IN_CHANNEL
