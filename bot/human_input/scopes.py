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
from dataclasses import dataclass

from bot.human_input.ledger import Ledger
from bot.human_input.settler import Settler
from bot.human_input.snapshots import Notifier, PendingInputEvent
from bot.human_input.tasks import Tasks, in_callback
from bot.records import PendingInput, RequestStatus

log = logging.getLogger("bot.human_input")

DENIED_BY_HOOK = "Denied by ON_USER_INPUT_REQUIRED hook"
NOTIFIER_BUDGET_SECONDS = 30.0


@dataclass(slots=True)
class Scope:
    """A channel scope (or the default one, key None): its notifier and whether it is closed."""

    notifier: Notifier | None = None
    token: str | None = None
    closed: bool = False


class Scopes:
    """The channels' scopes, and the notifier calls still running (with their channel)."""

    def __init__(
        self, ledger: Ledger, settler: Settler, tasks: Tasks, notifier_budget: float
    ) -> None:
        self._ledger = ledger
        self._settler = settler
        self._tasks = tasks
        self.notifier_budget = notifier_budget
        self._scopes: dict[str | None, Scope] = {None: Scope()}
        # Running notifier calls, with the channel of their request (close() cuts a channel's).
        self._notifiers: dict[asyncio.Task[object], str] = {}

    def set_notifier(self, callback: Notifier, *, channel_id: str | None = None) -> str:
        """Set the notifier for one channel (or the default) and reopen that scope."""
        token = secrets.token_hex(8)
        self._scopes[channel_id] = Scope(notifier=callback, token=token)
        return token

    def check_open(self, channel_id: str) -> None:
        closed = self.closed_reason(channel_id)
        if closed is not None:
            raise RuntimeError(closed)

    def closed_reason(self, channel_id: str) -> str | None:
        scope = self._scopes.get(channel_id)
        if not (self._scopes[None].closed or (scope is not None and scope.closed)):
            return None
        where = f"channel '{channel_id}'" if scope is not None and scope.closed else "handler"
        return f"Human input {where} is closed"

    def start_notifier(self, request: PendingInput) -> None:
        scope = self._scopes.get(request.channel_id) or self._scopes[None]
        if scope.notifier is None:
            return
        task = self._tasks.spawn(self._run_notifier(scope.notifier, request))
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
            self._settler.reject(request.pending_id, DENIED_BY_HOOK)

    async def close(self, channel_id: str | None, registration: str | None) -> bool:
        """Withdraw active work and refuse later creates, globally or for one channel; cut the
        notifiers still running for it (a notifier may hold its 30 s budget on a request that
        is now withdrawn). False if `registration` no longer owns the channel (nothing done)."""
        scope = self._scopes.get(channel_id)
        if registration is not None and (scope is None or scope.token != registration):
            return False  # another registration owns this channel now
        self._scopes[channel_id] = Scope(closed=True)
        where = "handler" if channel_id is None else f"channel '{channel_id}'"
        for entry in list(self._ledger.active.values()):
            request = entry.request
            if channel_id in (None, request.channel_id) and request.status is RequestStatus.PENDING:
                self._settler.settle(
                    entry, RequestStatus.CANCELLED, reason=f"Human input {where} closed"
                )
        current = asyncio.current_task()
        cut = [
            task
            for task, channel in self._notifiers.items()
            if task is not current and channel_id in (None, channel)
        ]
        for task in cut:
            task.cancel()
        if channel_id is None:
            await self._tasks.drain()
        elif cut and not in_callback.get():
            await asyncio.gather(*cut, return_exceptions=True)
        return True
