"""The handler's background work: settles being written, observers and notifiers being run.

A close must not lose an edit, so what was started here can be waited for (`drain`); but not
from inside one of the handler's own callbacks, which would wait for itself (`in_callback`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from contextvars import ContextVar
from typing import Any

# Set inside the handler's own callbacks (notifiers, observers): a close() or drain() from there
# must not wait for the very callback that called it.
in_callback: ContextVar[bool] = ContextVar("hitl_in_callback", default=False)


class Tasks:
    """The tasks the handler started and has not seen finish."""

    def __init__(self) -> None:
        self._running: set[asyncio.Task[Any]] = set()

    def spawn(self, coroutine: Awaitable[Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._running.add(task)
        task.add_done_callback(self._running.discard)
        return task

    async def drain(self) -> None:
        """Wait until every task started here (and every one those start) has finished;
        returns at once from inside a notifier or an observer."""
        if in_callback.get():
            return
        while self._running:
            await asyncio.gather(*list(self._running), return_exceptions=True)
