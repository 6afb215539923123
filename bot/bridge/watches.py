"""A turn watched live: what a surface is told of one running turn (its steps, the changes of
the requests in its room, how it ended), and `Watches`, which tells several watches of one
turn the same (a Slack status line and a streamed reply). Turns (bot/bridge/turns.py) tell
them; the surfaces draw them.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol

from bot.agent.steps import RunSteps, ToolStep
from bot.human_input import RequestUpdate


class Ending(StrEnum):
    FINISHED = "finished"  # the model had its last word
    STOPPED = "stopped"  # someone stopped it
    FAILED = "failed"  # something went wrong (the room was told SORRY or UNAVAILABLE)
    SUSPENDED = "suspended"  # this worker shuts down: another goes on with the run


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """How a turn ended; `by` is who stopped it."""

    ending: Ending
    by: str | None = None


class TurnWatch(RunSteps, Protocol):
    """A surface's live view of one turn: its steps, the changes of the requests in its room
    while it runs (a gated call waiting for approval, then decided), then its end (after its
    last words were posted, so a surface may close a stream once everything is in it)."""

    def request_changed(self, update: RequestUpdate) -> None:
        """Like the steps: returns at once."""
        ...

    async def ended(self, end: TurnEnd) -> None: ...


class Watches:
    """Several watches of one turn (a status line and a streamed reply), told the same."""

    def __init__(self, *watches: TurnWatch) -> None:
        self.watches = watches

    def thinking(self) -> None:
        for watch in self.watches:
            watch.thinking()

    def text(self, delta: str) -> None:
        for watch in self.watches:
            watch.text(delta)

    def discarded(self) -> None:
        for watch in self.watches:
            watch.discarded()

    def tool_started(self, step: ToolStep) -> None:
        for watch in self.watches:
            watch.tool_started(step)

    def tool_finished(self, step: ToolStep) -> None:
        for watch in self.watches:
            watch.tool_finished(step)

    def request_changed(self, update: RequestUpdate) -> None:
        for watch in self.watches:
            watch.request_changed(update)

    async def ended(self, end: TurnEnd) -> None:
        for watch in self.watches:
            await watch.ended(end)
