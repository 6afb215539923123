"""Observers (the chat surfaces) hear every transition of every request, in order per request."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from bot.human_input.base import HandlerState, in_callback
from bot.human_input.snapshots import Observer, RenderState, RequestUpdate
from bot.records import PendingInput, RequestStatus

PENDING = RequestStatus.PENDING

if TYPE_CHECKING:
    from bot.policies.escalation import Audience
    from bot.policies.tally import Tally

log = logging.getLogger("bot.human_input")


class Observing(HandlerState):
    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """Hear every transition of every request; returns a function that stops it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def announce_preparing(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        room_id: str = "",
        tool_call_id: str = "",
        channel_id: str = "",
        channel_type: str = "ai",
        actor_id: str | None = None,
    ) -> None:
        """Tell observers a human tool's call is streaming in (CopilotKit's inProgress)."""
        call = PendingInput("", tool_name, arguments, room_id, tool_call_id, channel_id,
                            channel_type=channel_type, actor_id=actor_id)  # fmt: skip
        self._tell_observers(RequestUpdate.of(call, RenderState.IN_PROGRESS))

    def announce_dropped(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        room_id: str = "",
        tool_call_id: str = "",
        channel_id: str = "",
        channel_type: str = "ai",
        actor_id: str | None = None,
        reason: str = "",
    ) -> None:
        """Tell observers an announced call never became a request (refused, or cut short),
        so a "Preparing…" message can be closed."""
        call = PendingInput(
            "", tool_name, arguments, room_id, tool_call_id, channel_id,
            channel_type=channel_type, actor_id=actor_id, reason=reason,
        )  # fmt: skip
        self._tell_observers(RequestUpdate.of(call, RenderState.CANCELLED))

    def _notify_observers(
        self, request: PendingInput, tally: Tally | None = None, audience: Audience | None = None
    ) -> None:
        """Queue the request's current state (with the votes so far, and who may answer it
        under its policy, if known) for the observers, in order: each observer has finished
        with one update of a request before it is given the next (a surface's edit never
        overtakes the post it edits)."""
        if not self._observers:
            return
        if audience is None and self.audience_of is not None and request.status is PENDING:
            audience = self.audience_of(request)
        update = RequestUpdate.of(request, tally=tally, audience=audience)
        queued = self._deliveries.get(request.id)
        if queued is not None:  # a delivery is running: it takes this one next
            queued.append(update)
            return
        self._deliveries[request.id] = [update]
        self._spawn(self._deliver(request.id))

    async def _deliver(self, request_id: str) -> None:
        updates = self._deliveries[request_id]
        try:
            while updates:
                await self._observe_all(updates.pop(0))
        finally:
            del self._deliveries[request_id]

    def _tell_observers(self, update: RequestUpdate) -> None:
        if self._observers:
            self._spawn(self._observe_all(update))

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
