"""The console surface: requests shown in a terminal, answered by typing. The embedded default.

Requests are asked one at a time, in the order they arrive; every other transition is printed
as it happens. What a request shows and how it can be answered is its view (`build_view`):
its controls become a numbered menu (a lone answering control with a form is asked at once),
a control's form is asked field by field, and the answer goes through the core's router, which
decides it. A terminal is anything that reads a line and writes text, so tests drive it.
"""

from __future__ import annotations

import asyncio
import logging
import mimetypes
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from adapters.ops.terminal import one_line
from adapters.surfaces.console.render import (
    INDENT,
    REJECT_HINT,
    agent_lines,
    answering,
    draw,
    field_errors,
    field_input,
    field_prompt,
    menu,
    menu_prompt,
    phrase,
    pick,
    rejection,
    sure_prompt,
    yes,
)
from bot import PendingInputStatus, RenderState, RequestUpdate
from bot.doors.addresses import Address, Addressee, UnknownAddressError
from bot.human_tools.forms import FieldKind, FormField
from bot.requests.kinds import Control, Verb
from bot.requests.router import Interaction, Invalid, Outcome, Refused, Router
from bot.requests.view import RequestView, build_view
from bot.words.phrases import Phrase

log = logging.getLogger(__name__)


class Terminal(Protocol):
    async def read_line(self, prompt: str) -> str | None:
        """The next line typed (without its newline), or None once input is closed."""
        ...

    def write(self, text: str) -> None: ...


SURFACE = "console"
PREFIX = "console:"
CLOSED = "The console was closed"


def room_of(user: str) -> str:
    """The terminal's room: one per user at the keyboard."""
    return f"{PREFIX}{user}"


@dataclass(frozen=True, slots=True)
class Stop:
    """`/reject <reason>` typed at a prompt, or input closed: the request is declined."""

    reason: str


def file_input(typed: str) -> dict[str, Any] | None:
    """A file field's input for a typed path (None when there is no file there)."""
    path = Path(typed.strip()).expanduser()
    if not path.is_file():
        return None
    resolved = path.resolve()
    return {
        "name": path.name,
        "size": resolved.stat().st_size,
        "url": resolved.as_uri(),
        "mimetype": mimetypes.guess_type(path.name)[0] or "",
    }


class ConsoleSurface:
    """The core's surface (bot/bridge/surfaces.py) for the terminal's room: prints transitions, asks
    executing requests in turn, and prints the agent's words."""

    name = SURFACE
    room_prefix = PREFIX

    def __init__(self, router: Router, terminal: Terminal, *, user: str) -> None:
        self.router = router
        self.terminal = terminal
        self.user = user
        self._queue: asyncio.Queue[RequestUpdate] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None
        # Calls announced as "Preparing…" and not asked yet: a call cut while asked is told
        # as withdrawn twice (as a request and as an announced call); the console says it once.
        self._announced: set[str] = set()
        self.withdrawn = 0  # requests whose wait was cut (a Ctrl-C), as told here

    def view(self, update: RequestUpdate) -> RequestView:
        return build_view(update, self.router.tools.get(update.tool_name))

    async def observe(self, update: RequestUpdate) -> None:
        if update.state is RenderState.IN_PROGRESS:
            self._announced.add(update.tool_call_id)
        elif not update.pending_id:  # an announced call that was not asked ...
            if update.tool_call_id not in self._announced:
                return  # ... or was after all, and its withdrawal is told as a request's
            self._announced.discard(update.tool_call_id)
        elif update.state is RenderState.EXECUTING and not update.shown_again:  # asked once
            self._announced.discard(update.tool_call_id)
            self.ask(update)
            return
        elif update.state is RenderState.CANCELLED and not update.settled_by:
            self.withdrawn += 1
        self.terminal.write(draw(self.view(update)))

    def ask(self, update: RequestUpdate) -> None:
        """Ask an open request after those already waiting their turn."""
        self._queue.put_nowait(update)
        if self._worker is None:
            self._worker = asyncio.create_task(self._ask_in_turn())

    async def say(self, room_id: str, text: str) -> None:
        self.terminal.write(agent_lines(text))

    async def find(self, address: Address) -> Addressee:
        """The terminal has no addresses: doors are served by `serve`, not the demo."""
        raise UnknownAddressError("the console demo takes no requests from doors")

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    async def _ask_in_turn(self) -> None:
        while True:
            update = await self._queue.get()
            try:
                record = await self.router.load(update.pending_id)
                if record is not None and record.status is PendingInputStatus.PENDING:
                    await self._ask(self.view(update))
            except Exception:  # one request's failure must not stop the others being asked
                log.exception("asking for request %s failed", update.pending_id)

    async def _ask(self, view: RequestView) -> None:
        self.terminal.write(draw(view))
        self.terminal.write(INDENT + REJECT_HINT)
        answers = answering(view.controls)
        only = answers[0] if len(answers) == 1 and answers[0].form is not None else None
        while True:
            control = only or await self._choose(view.controls)
            if isinstance(control, Stop):
                if await self._decline(view, control.reason):
                    return
                continue
            if control.confirm is not None:
                sure = await self._sure(control.confirm)
                if isinstance(sure, Stop):
                    if await self._decline(view, sure.reason):
                        return
                    continue
                if not sure:
                    continue
            if await self._answer(view, control):
                return

    async def _read(self, prompt: str) -> str | Stop:
        line = await self.terminal.read_line(prompt)
        if line is None:
            return Stop(CLOSED)
        reason = rejection(line)
        return Stop(reason) if reason is not None else line

    async def _choose(self, controls: tuple[Control, ...]) -> Control | Stop:
        self.terminal.write(menu(controls))
        while True:
            line = await self._read(menu_prompt(controls))
            if isinstance(line, Stop):
                return line
            try:
                return pick(controls, line)
            except ValueError as problem:
                self.terminal.write(f"{INDENT}! {problem}")

    async def _sure(self, question: Phrase) -> bool | Stop:
        line = await self._read(sure_prompt(question))
        return line if isinstance(line, Stop) else yes(line)

    async def _answer(self, view: RequestView, control: Control) -> bool:
        """Ask the control's form (again for each field the core found wrong) and send it;
        False sends the person back to the controls."""
        fields = control.form.fields if control.form is not None else ()
        if control.form is not None and len(fields) > 1:
            self.terminal.write(INDENT + one_line(control.form.title))
        inputs: dict[str, Any] = {}
        todo = list(fields)
        while True:
            for spec in todo:
                value = await self._field(spec)
                if isinstance(value, Stop):
                    return await self._decline(view, value.reason)
                inputs[spec.name] = value
            outcome = await self._send(view, control.verb, inputs)
            if not isinstance(outcome, Invalid):
                return True
            if not fields:
                return False
            wrong = [spec for spec in fields if spec.name in outcome.errors]
            todo = wrong if len(wrong) == len(outcome.errors) else list(fields)

    async def _field(self, spec: FormField) -> Any:
        """The input for one field, as the core reads it, or a Stop."""
        asked = field_prompt(spec)
        for line in asked.before:
            self.terminal.write(line)
        while True:
            typed = await self._read(asked.prompt)
            if isinstance(typed, Stop):
                return typed
            if spec.kind is FieldKind.FILE and typed.strip():
                file = file_input(typed)
                if file is not None:
                    return file
                self.terminal.write(f"{INDENT}! no file at {one_line(typed.strip())}")
                continue
            try:
                return field_input(spec, typed)
            except ValueError as problem:
                self.terminal.write(f"{INDENT}! {problem}")

    async def _decline(self, view: RequestView, reason: str) -> bool:
        outcome = await self._send(view, Verb.DECLINE, {"reason": reason})
        return not isinstance(outcome, Invalid) or reason == CLOSED

    async def _send(self, view: RequestView, verb: Verb, inputs: dict[str, Any]) -> Outcome:
        """The router's outcome for the person's answer; what was not taken is said."""
        interaction = Interaction(view.request_id, self.user, verb, inputs, surface=SURFACE)
        outcome = await self.router.handle(interaction)
        if isinstance(outcome, Refused):
            self.terminal.write(f"{INDENT}! {phrase(outcome.notice)}")
        elif isinstance(outcome, Invalid):
            form = outcome.form
            for line in field_errors(form.fields if form else (), outcome.errors):
                self.terminal.write(line)
        return outcome
