"""Observers (the chat surfaces) hear every transition of every request, in order per request;
the handler's background work (settles being written, observers and notifiers being run) is
its `Tasks`.

A close must not lose an edit, so what was started here can be waited for (`Tasks.drain`); but
not from inside one of the handler's own callbacks, which would wait for itself (`in_callback`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from typing import Any

from bot.human_input.snapshots import AudienceView, Observer, RequestUpdate, TallyView
from bot.records import PendingInput, RequestStatus

PENDING = RequestStatus.PENDING

log = logging.getLogger("bot.human_input")

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


class Observers:
    """The surfaces told of each transition. `audience_of` names who may answer an open
    request under its policy (bot/human_input/rules.py), shown in every message of it."""

    def __init__(
        self, tasks: Tasks, audience_of: Callable[[PendingInput], AudienceView | None] | None
    ) -> None:
        self.tasks = tasks
        self._audience_of = audience_of
        self._observers: list[Observer] = []
        # Updates of a request not yet delivered to the observers, while a delivery runs.
        self._deliveries: dict[str, list[RequestUpdate]] = {}

    def add(self, observer: Observer) -> Callable[[], None]:
        """Hear every transition of every request; returns a function that stops it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def notify(
        self,
        request: PendingInput,
        tally: TallyView | None = None,
        audience: AudienceView | None = None,
    ) -> None:
        """Queue the request's current state (with the votes so far, and who may answer it
        under its policy, if known) for the observers, in order: each observer has finished
        with one update of a request before it is given the next (a surface's edit never
        overtakes the post it edits)."""
        if not self._observers:
            return
        if audience is None and self._audience_of is not None and request.status is PENDING:
            audience = self._audience_of(request)
        update = RequestUpdate.of(request, tally=tally, audience=audience)
        queued = self._deliveries.get(request.id)
        if queued is not None:  # a delivery is running: it takes this one next
            queued.append(update)
            return
        self._deliveries[request.id] = [update]
        self.tasks.spawn(self._deliver(request.id))

    def tell(self, update: RequestUpdate) -> None:
        """Tell the observers `update` at once (a call, or a request held nowhere here)."""
        if self._observers:
            self.tasks.spawn(self._observe_all(update))

    async def _deliver(self, request_id: str) -> None:
        updates = self._deliveries[request_id]
        try:
            while updates:
                await self._observe_all(updates.pop(0))
        finally:
            del self._deliveries[request_id]

    async def _observe_all(self, update: RequestUpdate) -> None:
        in_callback.set(True)
        observers = list(self._observers)
        if len(observers) == 1:
            await _observe(observers[0], update)
        elif observers:
            await asyncio.gather(*(_observe(observer, update) for observer in observers))


async def _observe(observer: Observer, update: RequestUpdate) -> None:
    try:
        await observer(update)
    except Exception:
        log.exception("observer failed on %s of %s", update.state, update.pending_id)
