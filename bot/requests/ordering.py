"""Showing each request's updates one at a time, in the order they happened, on any surface.

The core tells a surface every transition as its own task; a surface posts, then edits one
message per request, so two updates of one request must not overtake each other (an edit to
"answered" landing before the post of "executing"). `InOrder` runs a surface's drawing of one
request's updates under a lock of its own, and forgets the lock once the request has ended.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from bot.human_input import RenderState, RequestUpdate

ENDINGS = frozenset({
    RenderState.COMPLETE, RenderState.REJECTED, RenderState.EXPIRED, RenderState.CANCELLED,
    RenderState.UNDELIVERABLE,
})  # fmt: skip


class InOrder:
    """One lock per tool call (or request, for one made without a call)."""

    def __init__(self) -> None:
        self._locks: dict[str, asyncio.Lock] = {}

    async def run(self, update: RequestUpdate, show: Callable[[], Awaitable[None]]) -> None:
        """Run `show()` (drawing `update`) after the request's earlier updates were drawn."""
        key = update.tool_call_id or update.pending_id
        lock = self._locks.setdefault(key, asyncio.Lock())
        async with lock:
            await show()
        if update.state in ENDINGS and not lock.locked():
            self._locks.pop(key, None)
