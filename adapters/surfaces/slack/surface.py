"""The Slack surface: posts each request in its thread and edits that message on every change.

Updates of one request are shown in order (bot/requests/ordering.py); a failed Web API call is
retried (slack_sdk's handlers for 429, 5xx and dropped connections, then our own backoff for
transient errors) and, if it still fails, logged as an error: never dropped silently. A new
request that cannot be posted at all is undeliverable: `observe` raises UndeliverableError and
the core settles it so (the model is told the person could not be reached).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.addresses import SlackAddresses
from adapters.surfaces.slack.calls import SlackCallError, call_slack, call_slack_or_fail
from adapters.surfaces.slack.messages import SlackMessage, render_message
from adapters.surfaces.slack.rooms import PREFIX, SlackRoom, parse_room
from adapters.surfaces.slack.scheme import SURFACE
from adapters.surfaces.slack.text import MESSAGE_TEXT, SLACK, escape, truncate
from bot import HumanTool, RequestUpdate, UndeliverableError
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.human_input import RequestRows
from bot.requests.copies import CopyRefs, MemoryCopies
from bot.requests.stored_requests import posted_record
from bot.requests.trail import MessageTrail
from bot.words.model_text import defused
from bot.words.phrases import Phrase

log = logging.getLogger(__name__)

Ref = dict[str, str]  # where a message is: {"channel", "ts"}, and its "link" once posted


def permalink(workspace_url: str, channel: str, ts: str, thread_ts: str | None = None) -> str:
    """A message's link as Slack writes its permalinks (chat.getPermalink's form), from the
    workspace's address (auth.test's `url`): kept with where the request was posted, so the
    audit log's `request.delivered` row links to the message."""
    link = f"{workspace_url.rstrip('/')}/archives/{channel}/p{ts.replace('.', '')}"
    return f"{link}?thread_ts={thread_ts}&cid={channel}" if thread_ts else link


class SlackSurface:
    """The core's surface (bot/bridge/surfaces.py) for rooms that are Slack threads."""

    name = SURFACE
    room_prefix = PREFIX

    def __init__(
        self,
        client: AsyncWebClient,
        store: RequestRows,
        tools: Mapping[str, HumanTool],
        copies: CopyRefs | None = None,
    ) -> None:
        """`copies` keeps where the copies a policy's `deliver` adds were posted (an approvals
        channel, DMs): the store's rows (bot.store.copies) for several workers."""
        self.client = client
        self.store = store
        self.tools = tools
        self.copies = copies if copies is not None else MemoryCopies()
        self._trail: MessageTrail[SlackRoom, Ref] = MessageTrail(self, SURFACE, store.get_request)
        self._addresses = SlackAddresses(client)
        self.workspace_url = ""  # auth.test's `url`, once the adapter has started

    async def observe(self, update: RequestUpdate) -> None:
        room = parse_room(update.room_id)
        if room is not None:
            await self._trail.show(update, room)

    # -- the core's Messages (bot/requests/trail.py): post, edit, keep, stored

    async def post(self, room: SlackRoom, update: RequestUpdate) -> Ref:
        message = render_message(update, self.tools.get(update.tool_name))
        try:
            ts = await self._post_or_fail(room, message)
        except SlackCallError as err:
            raise UndeliverableError(str(err)) from None
        ref = {"channel": room.channel, "ts": ts}
        if self.workspace_url:
            ref["link"] = permalink(self.workspace_url, room.channel, ts, room.thread_ts or None)
        return ref

    async def edit(self, ref: Ref, update: RequestUpdate) -> bool:
        message = render_message(update, self.tools.get(update.tool_name))
        return await self.edit_message(ref["channel"], ref["ts"], message)

    async def keep(self, update: RequestUpdate, ref: Ref) -> Ref:
        if update.copy:
            await self.copies.keep(update.pending_id, SURFACE, update.room_id, ref)
        else:
            await self.store.set_message_ref(update.pending_id, SURFACE, ref)
        return ref

    async def stored(self, update: RequestUpdate) -> Ref | None:
        if update.copy:
            ref = await self.copies.ref(update.pending_id, SURFACE, update.room_id)
        else:
            record = await posted_record(self.store, update.pending_id, SURFACE)
            ref = record.message_refs.get(SURFACE) if record is not None else None
        return {"channel": str(ref["channel"]), "ts": str(ref["ts"])} if ref else None

    async def ping(self, room: SlackRoom, update: RequestUpdate, said: Phrase) -> None:
        """A reply in the request's thread naming people (mentions notify them)."""
        text = truncate(said.render(SLACK), MESSAGE_TEXT)
        await call_slack(
            lambda: self.client.chat_postMessage(
                channel=room.channel, thread_ts=room.thread_ts or None, text=text
            ),
            "chat.postMessage",
        )

    async def _post_or_fail(self, room: SlackRoom, message: SlackMessage) -> str:
        response = await call_slack_or_fail(
            lambda: self.client.chat_postMessage(
                channel=room.channel,
                thread_ts=room.thread_ts or None,
                text=message.text,
                blocks=message.blocks,
            ),
            "chat.postMessage",
        )
        return str(response["ts"])

    async def post_message(self, room: SlackRoom, message: SlackMessage) -> None:
        """A message of ours other than a request's (a chooser), in the room."""
        await call_slack(
            lambda: self.client.chat_postMessage(
                channel=room.channel, thread_ts=room.thread_ts or None, text=message.text,
                blocks=message.blocks,
            ),
            "chat.postMessage",
        )  # fmt: skip

    async def edit_message(self, channel: str, ts: str, message: SlackMessage) -> bool:
        response = await call_slack(
            lambda: self.client.chat_update(
                channel=channel, ts=ts, text=message.text, blocks=message.blocks
            ),
            "chat.update",
        )
        return response is not None

    async def find(self, address: Address) -> Addressee:
        """A door's address in Slack: a DM, a channel, a thread
        (adapters/surfaces/slack/addresses.py)."""
        try:
            return await self._addresses.find(address)
        except SlackCallError as err:
            raise UnknownAddressError(f"{address.text} cannot be reached now: {err}") from None

    async def say(self, room_id: str, text: str) -> None:
        """The agent's words in a room of ours (a resumed run's)."""
        room = parse_room(room_id)
        if room is not None:
            await self.post_text(room, text)

    async def post_text(self, room: SlackRoom, text: str) -> None:
        """Post the agent's words in the thread, escaped: the model cannot ping anyone, hide a
        link's target or embed an image (bot/words/model_text.py; nothing unfurled either)."""
        safe = truncate(escape(defused(text)), MESSAGE_TEXT)
        await call_slack(
            lambda: self.client.chat_postMessage(
                channel=room.channel,
                thread_ts=room.thread_ts or None,
                text=safe,
                unfurl_links=False,
                unfurl_media=False,
            ),
            "chat.postMessage",
        )

    async def tell(self, channel: str, user: str, text: str, thread_ts: str | None = None) -> None:
        """A private (ephemeral) note to one user."""
        await call_slack(
            lambda: self.client.chat_postEphemeral(
                channel=channel, user=user, text=text, thread_ts=thread_ts
            ),
            "chat.postEphemeral",
        )
