"""A turn's status line in its Slack thread (`assistant.threads.setStatus`): "is thinking…",
"is running deploy…", "is waiting for Alice to approve deploy", cleared when the turn ends.

A `StatusLine` is the turn's watch (bot/bridge/turns.py): told each step synchronously, it only
notes the latest status; one writer task per turn sets it, so a burst of steps is one call
(only the latest status matters) and a slow Slack never slows the turn. Slack clears a status
about two minutes after it was set: the writer sets it again every `refresh` seconds while the
turn runs. A status is plain text, so people are shown by name: a name not cached yet shows as
the id, is looked up (users.info, bot/bridge/people.py) and the status set again once known.

Slack answering `not_allowed` or `missing_scope` turns the status lines off for the workspace
(one INFO line): a turn never depends on them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from adapters.surfaces.slack.calls import slack_error
from adapters.surfaces.slack.rooms import SlackRoom
from adapters.surfaces.slack.text import fit, truncate
from bot.agent.steps import ToolStep
from bot.bridge.people import PeopleNames
from bot.bridge.watches import TurnEnd
from bot.human_input import RenderState, RequestUpdate
from bot.words.phrases import Phrase, listed, placeholders
from bot.words.tool_names import CONFIRM_ACTION, GATE_TOOL, REQUEST_APPROVAL

log = logging.getLogger(__name__)

REFRESH = 90.0  # seconds between settings of one status: Slack clears it after about two minutes
LOADING_MESSAGES = 10  # Slack's most
STATUS_CHARS = 150  # a status is a line under the thread, not a message
NAME_CHARS = 60  # a tool's or a person's name in it
# Slack's answers that mean no status line can be set in this workspace at all.
TURNED_OFF_BY = frozenset({"not_allowed", "missing_scope", "no_permission"})
APPROVALS = frozenset({REQUEST_APPROVAL, CONFIRM_ACTION, GATE_TOOL})

THINKING = Phrase("is thinking…")
THINKING_LOADING = ("Thinking…", "Reading the conversation…", "Working out the next step…")
CLEARED = Phrase("")


@dataclass(frozen=True, slots=True)
class Status:
    """What a status line says: the status, and the lines Slack may rotate in its place (only
    where they say no less than the status: thinking)."""

    said: Phrase
    loading: tuple[str, ...] = field(default=())


def running(step: ToolStep) -> Status:
    return Status(Phrase("is running {tool}…", values={"tool": step.name}))


def waiting(update: RequestUpdate) -> Status:
    """Who the open request waits for (the policy's approvers, else its actor) and for what."""
    keys = placeholders("who")
    people = {next(keys): who for who in _deciders(update)}
    whom = listed([f"{{{key}}}" for key in people]) if people else "someone here"
    tool = str(update.arguments.get("tool") or GATE_TOOL) if update.tool_name == GATE_TOOL else ""
    if update.tool_name in APPROVALS:
        what = " to approve {tool}"
        tool = tool or update.tool_name
    else:
        what = " to answer"
    return Status(Phrase(f"is waiting for {whom}{what}", people, values={"tool": tool}))


def _deciders(update: RequestUpdate) -> list[str]:
    """The ids the request's message names as who may answer it."""
    who = update.audience.who(update.actor_id) if update.audience is not None else None
    if who is not None:
        return list(who.people.values())
    return [update.actor_id] if update.actor_id else []


class NamesFormatter:
    """A phrase as plain text with people by their cached names (ids until they are known)."""

    def __init__(self, names: PeopleNames) -> None:
        self.names = names
        self.unknown: list[str] = []

    def text(self, literal: str) -> str:
        return fit(literal, NAME_CHARS)  # escaped: a tool's name is the model's text

    def person(self, user_id: str) -> str:
        name = self.names.known(user_id)
        if name is None:
            self.unknown.append(user_id)
        return fit(name or user_id, NAME_CHARS)

    def moment(self, when: object) -> str:  # no status names a moment
        return str(when)


class StatusLines:
    """The status lines of one workspace: a watch per turn, until Slack refuses them."""

    def __init__(self, client: AsyncWebClient, names: PeopleNames, refresh: float = REFRESH):
        self.client = client
        self.names = names
        self.refresh = refresh  # public: tests set a short one
        self.on = True

    def watch(self, room: SlackRoom, actor_id: str) -> StatusLine | None:
        """The status line of a turn in `room`; None when off or the room is no thread."""
        if not self.on or not room.thread_ts:
            return None
        return StatusLine(self, room)

    async def set(self, room: SlackRoom, status: str, loading: Sequence[str] = ()) -> bool:
        """Set the thread's status (`""` clears it); False once the status lines are off."""
        if not self.on:
            return False
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=room.channel, thread_ts=room.thread_ts, status=status,
                loading_messages=list(loading[:LOADING_MESSAGES]) or None,
            )  # fmt: skip
        except SlackApiError as err:
            error = slack_error(err)
            if error in TURNED_OFF_BY:
                self.on = False
                log.info("Slack: status lines are off in this workspace (setStatus: %s)", error)
                return False
            log.warning("Slack assistant.threads.setStatus failed: %s", error)
        except (TimeoutError, OSError, aiohttp.ClientError) as err:
            log.warning("Slack assistant.threads.setStatus failed: %s", type(err).__name__)
        return True


class StatusLine:
    """One turn's status line, a TurnWatch (see the module's docstring)."""

    def __init__(self, lines: StatusLines, room: SlackRoom) -> None:
        self.lines = lines
        self.room = room
        self._wanted: Status | None = None  # the latest status asked for, not yet set
        self._running: Status | None = None  # the tool call under way (said again after a wait)
        self._changed = asyncio.Event()
        self._ending = False
        self._lookups: set[asyncio.Task[None]] = set()
        self._writer = asyncio.create_task(self._write())

    def _want(self, status: Status) -> None:
        self._wanted = status
        self._changed.set()

    def thinking(self) -> None:
        self._running = None
        self._want(Status(THINKING, THINKING_LOADING))

    def text(self, delta: str) -> None:
        return None  # the reply shows itself; Slack clears the status when it is posted

    def discarded(self) -> None:
        return None

    def tool_started(self, step: ToolStep) -> None:
        self._running = running(step)
        self._want(self._running)

    def tool_finished(self, step: ToolStep) -> None:
        return None  # the model is asked next: `thinking`

    def request_changed(self, update: RequestUpdate) -> None:
        if update.copy:
            return
        if update.state is RenderState.EXECUTING:
            self._want(waiting(update))
        elif update.state is not RenderState.IN_PROGRESS and self._running is not None:
            self._want(self._running)  # answered: the call goes on (a gated tool now runs)

    async def ended(self, end: TurnEnd) -> None:
        self._ending = True
        self._changed.set()
        await self._writer
        for lookup in self._lookups:
            lookup.cancel()

    async def _write(self) -> None:
        """Set the latest status, again every `refresh` seconds, then clear it at the end."""
        shown: Status | None = None
        while not self._ending:
            try:
                async with asyncio.timeout(self.lines.refresh if shown is not None else None):
                    await self._changed.wait()
            except TimeoutError:
                pass  # set again before Slack lets it lapse
            self._changed.clear()
            if self._ending:
                break
            shown, self._wanted = self._wanted or shown, None
            if shown is not None and not await self._show(shown):
                return  # the status lines are off
        if shown is not None:
            await self.lines.set(self.room, "")

    async def _show(self, status: Status) -> bool:
        formatter = NamesFormatter(self.lines.names)
        said = truncate(status.said.render(formatter), STATUS_CHARS)
        if formatter.unknown:  # shown by id now; again by name once they are looked up
            self._learn(formatter.unknown)
        return await self.lines.set(self.room, said, status.loading)

    def _learn(self, ids: list[str]) -> None:
        lookups = self.lines.names.ask(ids)
        if not lookups:
            return  # looked up already, and nobody by that id: the id stays

        async def then_again() -> None:
            await asyncio.gather(*lookups, return_exceptions=True)
            self._changed.set()

        task = asyncio.create_task(then_again())
        self._lookups.add(task)
        task.add_done_callback(self._lookups.discard)
