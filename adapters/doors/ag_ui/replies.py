"""The model's replies in an AG-UI thread, streamed as the model writes them.

A `StreamedReplies` is the turn's `RunSteps` (bot/agent/steps.py): each piece of a reply becomes a
TEXT_MESSAGE_CONTENT of one message, opened by the first piece and ended when the reply is
complete (the loop's `on_text`, before the reply's tool calls run), a tool call starts, or the
turn ends. A reply no piece was told of (a model that does not stream) is sent whole when it is
complete. A reply cut short and asked again cannot be taken back: its message ends with a note,
and the reply asked again is a message of its own. What the stream queues, the thread's runs
read in order with everything else (adapters/doors/ag_ui/threads.py).
"""

from __future__ import annotations

from collections.abc import Callable

from ag_ui.core import (
    BaseEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
)

from adapters.doors.ag_ui import events
from bot.agent.steps import ToolStep

INTERRUPTED = "\n\n(interrupted: asked again)"

Put = Callable[[BaseEvent], None]


class StreamedReplies:
    """One turn's replies in its AG-UI thread (see the module's docstring)."""

    def __init__(self, put: Put) -> None:
        self._put = put
        self._message_id: str | None = None  # the message open now
        self._told = False  # a piece of the current reply was told

    # -- the steps (bot/agent/steps.py): each returns at once

    def thinking(self) -> None:
        self._told = False

    def text(self, delta: str) -> None:
        if not delta:
            return
        if self._message_id is None:
            self._message_id = events.new_id()
            self._put(TextMessageStartEvent(message_id=self._message_id, role="assistant"))
        self._put(TextMessageContentEvent(message_id=self._message_id, delta=delta))
        self._told = True

    def discarded(self) -> None:
        if self._message_id is not None:
            self._put(TextMessageContentEvent(message_id=self._message_id, delta=INTERRUPTED))
        self.end()
        self._told = False

    def tool_started(self, step: ToolStep) -> None:
        self.end()

    def tool_finished(self, step: ToolStep) -> None:
        return None

    # -- the loop's `on_text` and the turn's end

    def said(self, text: str) -> list[BaseEvent]:
        """The reply is complete: its message ends; one not streamed is told whole here."""
        if self._told:
            self.end()
            self._told = False
            return []
        return events.text_message(text)

    def end(self) -> None:
        if self._message_id is not None:
            self._put(TextMessageEndEvent(message_id=self._message_id))
            self._message_id = None
