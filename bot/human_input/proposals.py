"""Settles of requests another worker holds: handed to the holder as proposals.

A proposal is written beside the request and NOTIFYed; the holder applies it through the same
claim as its own settles, so it wins only if nothing came first (bot/human_input/holding.py).
The proposer waits for the decision, woken by `heard` (a NOTIFY) or polling.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

from bot.human_input.ports import HandlerStore
from bot.human_input.worker import Worker
from bot.records import Decision, Settlement

log = logging.getLogger("bot.human_input")

FIRST_POLL_SECONDS = 0.01
MAX_POLL_SECONDS = 0.25


class Proposals:
    """This worker's proposals to other workers' requests, and the proposers waiting here."""

    def __init__(self, worker: Worker) -> None:
        self._worker = worker
        self._listeners: dict[str, list[asyncio.Future[None]]] = {}

    async def offer(self, proposal: Settlement) -> tuple[bool, bool]:
        """Settle a request this worker does not hold: (won, and whether it was written here
        rather than by the holder, which then told the observers)."""
        store = self._store()
        direct = await store.propose(proposal)
        if direct is not None:
            return direct, direct
        delay = FIRST_POLL_SECONDS
        while True:
            await self._hear(proposal.request_id, delay)
            decision = await store.decision(proposal)
            if decision is Decision.ACCEPTED:
                return True, False
            if decision is Decision.REFUSED:
                return False, False
            if decision is Decision.ORPHANED:  # its holder is gone: settle it ourselves
                if await store.settle(proposal):
                    return True, True
                continue
            delay = min(delay * 2, MAX_POLL_SECONDS)

    def heard(self, request_id: str) -> None:
        """Something happened to the request in another process: wake its proposers here."""
        for heard in self._listeners.pop(request_id, ()):
            if not heard.done():
                heard.set_result(None)

    async def _hear(self, request_id: str, seconds: float) -> None:
        """Sleep until `heard(request_id)` or `seconds` pass."""
        heard: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        listeners = self._listeners.setdefault(request_id, [])
        listeners.append(heard)
        try:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(seconds):
                    await heard
        finally:
            if heard in listeners:
                listeners.remove(heard)
            if not listeners and self._listeners.get(request_id) is listeners:
                del self._listeners[request_id]

    def _store(self) -> HandlerStore:
        store = self._worker.store
        assert store is not None, "proposals are a store's"
        return store
