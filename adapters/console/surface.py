"""The console surface: requests shown in a terminal, answered by typing. The embedded default.

Requests are asked one at a time, in the order they arrive; every other transition is printed
as it happens. A terminal is anything that reads a line and writes text, so tests drive it.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Protocol

from adapters.console.render import (
    REJECT_PREFIX,
    Prompt,
    answer_from,
    describe,
    follow_up,
    prompts_for,
)
from bot import HumanInputHandler, RenderState, RequestUpdate


class Terminal(Protocol):
    async def read_line(self, prompt: str) -> str | None:
        """The next line typed (without its newline), or None once input is closed."""
        ...

    def write(self, text: str) -> None: ...


class StdioTerminal:
    """Standard input and output; reads run in a thread so the event loop keeps going."""

    async def read_line(self, prompt: str) -> str | None:
        self.write(f"{prompt}> ", end="")
        line = await asyncio.to_thread(sys.stdin.readline)
        return line.rstrip("\n") if line else None

    def write(self, text: str, end: str = "\n") -> None:
        sys.stdout.write(text + end)
        sys.stdout.flush()


HandlerLookup = Callable[[str], HumanInputHandler | None]


class ConsoleSurface:
    """Observer of every request: prints transitions, asks executing requests in turn."""

    def __init__(self, handler_for: HandlerLookup, terminal: Terminal, *, user: str) -> None:
        self.handler_for = handler_for
        self.terminal = terminal
        self.user = user
        self._queue: asyncio.Queue[RequestUpdate] = asyncio.Queue()
        self._worker: asyncio.Task[None] | None = None

    async def observe(self, update: RequestUpdate) -> None:
        if update.state is RenderState.EXECUTING:
            self._queue.put_nowait(update)
            if self._worker is None:
                self._worker = asyncio.create_task(self._ask_in_turn())
        else:
            self.terminal.write(describe(update))

    async def close(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            await asyncio.gather(self._worker, return_exceptions=True)

    async def _ask_in_turn(self) -> None:
        while True:
            update = await self._queue.get()
            handler = self.handler_for(update.channel_id)
            if handler is not None and update.pending_id in handler.pending:
                await self._ask(handler, update)

    async def _ask(self, handler: HumanInputHandler, update: RequestUpdate) -> None:
        self.terminal.write(describe(update))
        self.terminal.write(f"  (type {REJECT_PREFIX} <reason> to refuse)")
        while True:
            replies = await self._read_replies(update)
            if replies is None:
                await handler.decline(update.pending_id, "The console was closed", by=self.user)
                return
            if REJECT_PREFIX in replies:
                await handler.decline(update.pending_id, replies[REJECT_PREFIX], by=self.user)
                return
            try:
                answer = answer_from(update.tool_name, update.arguments, replies)
                settled = await handler.answer(update.pending_id, answer, by=self.user)
            except ValueError as problem:  # AnswerInvalidError included: ask again
                self.terminal.write(f"  ! {problem}")
                continue
            if not settled:
                self.terminal.write("  ! this request was already settled")
            return

    async def _read_replies(self, update: RequestUpdate) -> dict[str, str] | None:
        """The typed replies by prompt key; {REJECT_PREFIX: reason} for a refusal."""
        replies: dict[str, str] = {}
        pending: list[Prompt] = prompts_for(update.tool_name, update.arguments)
        while pending:
            prompt = pending.pop(0)
            line = await self.terminal.read_line(f"  {prompt.text}")
            if line is None:
                return None
            if line.strip().startswith(REJECT_PREFIX):
                return {REJECT_PREFIX: line.strip().removeprefix(REJECT_PREFIX).strip()}
            replies[prompt.key] = line
            extra = follow_up(update.tool_name, replies)
            if extra is not None:
                pending.append(extra)
        return replies
