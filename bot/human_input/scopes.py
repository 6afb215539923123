"""Channel scopes: each channel's notifier (ON_USER_INPUT_REQUIRED), and closing a channel.

One handler may be shared by several channels. A notifier runs beside the wait, never in front
of it; `close(channel_id=...)` withdraws that channel's requests and cuts that channel's
notifiers still running, and only that channel's.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import secrets

from bot.human_input.base import DENIED_BY_HOOK, HandlerState, Scope, in_callback
from bot.human_input.snapshots import Notifier, PendingInputEvent
from bot.records import PendingInput, RequestStatus

log = logging.getLogger("bot.human_input")


class Scopes(HandlerState):
    def set_notifier(self, callback: Notifier, *, channel_id: str | None = None) -> str:
        """Set the notifier for one channel (or the default) and reopen that scope."""
        token = secrets.token_hex(8)
        self._scopes[channel_id] = Scope(notifier=callback, token=token)
        return token

    def _check_open(self, channel_id: str) -> None:
        closed = self._closed_reason(channel_id)
        if closed is not None:
            raise RuntimeError(closed)

    def _closed_reason(self, channel_id: str) -> str | None:
        scope = self._scopes.get(channel_id)
        if not (self._scopes[None].closed or (scope is not None and scope.closed)):
            return None
        where = f"channel '{channel_id}'" if scope is not None and scope.closed else "handler"
        return f"Human input {where} is closed"

    def _start_notifier(self, request: PendingInput) -> None:
        scope = self._scopes.get(request.channel_id) or self._scopes[None]
        if scope.notifier is None:
            return
        task = self._spawn(self._run_notifier(scope.notifier, request))
        self._notifiers[task] = request.channel_id
        task.add_done_callback(self._notifier_done)

    def _notifier_done(self, task: asyncio.Task[object]) -> None:
        self._notifiers.pop(task, None)

    async def _run_notifier(self, notifier: Notifier, request: PendingInput) -> None:
        """Run the notifier beside the wait; False denies. A hang or a raise denies nothing."""
        event = PendingInputEvent.of(request)
        in_callback.set(True)
        try:
            async with asyncio.timeout(self.notifier_budget):
                outcome = notifier(event)
                if inspect.isawaitable(outcome):
                    outcome = await outcome
        except TimeoutError:
            log.warning("notifier for %s ran past %gs", request.pending_id, self.notifier_budget)
            return
        except Exception:
            log.exception("notifier for %s failed; the request stays open", request.pending_id)
            return
        if outcome is False:
            self.reject(request.pending_id, DENIED_BY_HOOK)

    async def close(
        self, *, channel_id: str | None = None, registration: str | None = None
    ) -> None:
        """Withdraw active work and refuse later creates, globally or for one channel; cut the
        notifiers still running for it (a notifier may hold its 30 s budget on a request that
        is now withdrawn)."""
        scope = self._scopes.get(channel_id)
        if registration is not None and (scope is None or scope.token != registration):
            return  # another registration owns this channel now
        self._scopes[channel_id] = Scope(closed=True)
        where = "handler" if channel_id is None else f"channel '{channel_id}'"
        for request in list(self._active.values()):
            if channel_id in (None, request.channel_id) and request.status is RequestStatus.PENDING:
                self._settle(request, RequestStatus.CANCELLED, reason=f"Human input {where} closed")
        current = asyncio.current_task()
        cut = [
            task
            for task, channel in self._notifiers.items()
            if task is not current and channel_id in (None, channel)
        ]
        for task in cut:
            task.cancel()
        if channel_id is None:
            await self._drain_tasks()
            if self._beater is not None:
                self._beater.cancel()
        elif cut and not in_callback.get():
            await asyncio.gather(*cut, return_exceptions=True)
