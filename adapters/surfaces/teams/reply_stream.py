"""One reply streamed in a Teams personal chat: informative lines, the text as it grows, then
the final message (Teams' streaming messages, as its Bot Connector takes them).

Every piece is a POST to the conversation's activities: first a `typing` activity with a
`streaminfo` entity (streamType `informative`, streamSequence 1) whose answer's id is the
stream's id; then more `typing` activities with that `streamId` and the next sequence
(`informative` lines while no text is shown, then `streaming` ones carrying the whole text so
far); last a `message` with streamType `final` and the stream's id, carrying the whole reply.
The activities are the Teams SDK's models (`add_stream_update`, `add_stream_final`).

Why not the SDK's `HttpStream` (microsoft_teams/apps/http_stream.py): it flushes every 0.5 s
(Teams allows about one update a second), retries a refused update up to 8 times with
backoff before giving up, and drops an informative line once text has started; the pieces go
through our `Connector` instead, which retries only what may be retried and counts the calls.

A stream that Teams refuses (403 `ContentStreamNotAllowed`: not a personal chat, or streaming
turned off; a stream past two minutes) or that fails for good is `broken`: nothing more is sent
on it, and the caller falls back to a plain message. One its user stopped with Teams' own stop
button (the same 403, saying the stream was cancelled) is `cancelled` too. Text is plain
(`textFormat: plain`), like every reply of the agent's (connector.text_activity), and rendered
by bot/words/model_text.py: a link shows its target, no image, no mass mention.
"""

from __future__ import annotations

from microsoft_teams.api import TypingActivityInput
from microsoft_teams.api.activities.message import MessageActivityInput
from microsoft_teams.api.models import ChannelData

from adapters.surfaces.teams.connector import TEXT_LIMIT, Connector, ConnectorError
from bot.words.model_text import defused

INFORMATIVE = "informative"
PLAIN = "plain"


def _cut(text: str) -> str:
    """The text a piece carries: rendered whole each time (bot/words/model_text.py), so a
    mention or a link split across two pieces is defused as the whole reply is."""
    text = defused(text)
    return text if len(text) <= TEXT_LIMIT else text[: TEXT_LIMIT - 1] + "…"


class ReplyStream:
    """One streamed message in one conversation (see the module's docstring). Not safe to
    drive from two tasks at once: its owner sends one piece at a time."""

    def __init__(self, connector: Connector, service_url: str, conversation_id: str) -> None:
        self.connector = connector
        self.service_url = service_url
        self.conversation_id = conversation_id
        self.id: str | None = None  # the stream's id: the first piece's activity id
        self.sequence = 0  # the last piece's streamSequence
        self.shown = ""  # the text the message shows now
        self.broken = False
        self.cancelled = False  # its user pressed Teams' stop button
        self.finished = False

    @property
    def open(self) -> bool:
        """Started, and neither finished nor broken: it takes more pieces."""
        return self.id is not None and not (self.finished or self.broken)

    async def inform(self, line: str) -> bool:
        """An informative line (only before any text is shown); whether it was sent."""
        if self.shown:
            return False
        piece = TypingActivityInput(text=_cut(line), text_format=PLAIN)
        piece.with_channel_data(ChannelData(stream_type=INFORMATIVE))
        return await self._send(piece)

    async def grow(self, text: str) -> bool:
        """The text so far (all of it: Teams replaces the message's text with each piece)."""
        piece = TypingActivityInput(text=_cut(text), text_format=PLAIN)
        if await self._send(piece):
            self.shown = text
            return True
        return False

    async def finish(self, text: str) -> bool:
        """The final message: the whole reply; whether Teams took it."""
        if not self.open:
            return False
        final = MessageActivityInput(text=_cut(text), text_format=PLAIN)
        final.id = self.id
        final.add_stream_final()
        try:
            await self.connector.send_or_fail(self.service_url, self.conversation_id, final)
        except ConnectorError as err:
            self._refused(err)
            return False
        self.finished, self.shown = True, text
        return True

    async def _send(self, piece: TypingActivityInput) -> bool:
        if self.finished or self.broken:
            return False
        piece.id = self.id  # None for the first piece: Teams gives the stream its id
        piece.add_stream_update(self.sequence + 1)
        try:
            sent = await self.connector.send_or_fail(self.service_url, self.conversation_id, piece)
        except ConnectorError as err:
            self._refused(err)
            return False
        self.sequence += 1
        if self.id is None:
            self.id = sent
        return True

    def _refused(self, err: ConnectorError) -> None:
        self.broken = True
        self.cancelled = "cancel" in err.refusal.lower()  # "Content stream was cancelled by user."
