"""Creating a request: the policy's rules applied, its row written, its deadline armed, the
observers and the channel's notifier told.

With a store the row (and its `created` audit row) is written before anyone is told, by the
worker that then holds it (bot/human_input/holding.py). The durable timers elsewhere (the
deadline sweep, the escalation steps) hear of each new request's times from here.

The channels' scopes (`Scopes`): each channel's notifier (ON_USER_INPUT_REQUIRED), and
closing a channel.

One handler may be shared by several channels. A notifier runs beside the wait, never in front
of it; `close(channel_id=...)` withdraws that channel's requests and cuts that channel's
notifiers still running, and only that channel's.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.human_input.holding import Holding
from bot.human_input.ledger import Entry, Ledger
from bot.human_input.observers import Observers, in_callback
from bot.human_input.rules import RequestRules
from bot.human_input.settler import Settler
from bot.human_input.snapshots import Notifier, PendingInputEvent
from bot.human_input.waiter import Waiters
from bot.records import EscalationState, Origin, PendingInput, RequestStatus
from bot.tools.context import current_origin, current_tool_actor_id
from bot.words.visible_text import visible_values

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
        self, ledger: Ledger, settler: Settler, observers: Observers, notifier_budget: float
    ) -> None:
        self._ledger = ledger
        self._settler = settler
        self._observers = observers
        self._tasks = observers.tasks
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

    def announce(self, request: PendingInput) -> None:
        """A new request: the observers are told, the channel's notifier started."""
        self._observers.notify(request)
        self.start_notifier(request)

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


class RequestIds:
    """New request ids: 24 hex digits from the OS's CSPRNG, as `secrets.token_hex(12)` makes
    them, 128 at a time rather than with a system call per request (a large part of
    a create() in memory, bench/human_input_bench.py --profile). A forked child starts afresh."""

    SIZE = 24  # hex digits

    def __init__(self) -> None:
        self._hex = ""
        self._at = 0

    def next(self) -> str:
        at = self._at
        if at >= len(self._hex):
            self._hex, at = os.urandom(self.SIZE * 64).hex(), 0
        self._at = at + self.SIZE
        return self._hex[at : at + self.SIZE]

    def forget(self) -> None:
        self._hex, self._at = "", 0


IDS = RequestIds()
os.register_at_fork(after_in_child=IDS.forget)


Poke = Callable[[datetime], None]
"""A durable timer told of a time a new request falls due (its deadline, an escalation step)."""


class Creator:
    """Makes requests, and tells the durable timers listening when they fall due."""

    def __init__(
        self,
        holding: Holding,
        waiters: Waiters,
        scopes: Scopes,
        rules: RequestRules,
        default_timeout: float,
    ) -> None:
        self._worker = holding.worker
        self._active = waiters.active
        self._scopes = scopes
        self._holding = holding
        self._waiters = waiters
        self._rules = rules
        self._timeout = default_timeout
        self._last = (0.0, timedelta(0))
        self.deadline_pokes: list[Poke] = []
        self.escalation_pokes: list[Poke] = []

    async def create(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        room_id: str,
        tool_call_id: str,
        channel_id: str,
        channel_type: str,
        actor_id: str | None,
        timeout: float | None,
        *,
        detached: bool,
        request_id: str | None = None,
        origin: Origin | None = None,
    ) -> PendingInput:
        """A pending request, answerable from here (see `HumanInputHandler.create`)."""
        self._scopes.check_open(channel_id)
        arguments = visible_values(arguments)  # what people read: no escapes, no bidi tricks
        now = datetime.now(UTC)
        rule = self._rules.lifetime  # the policy's deadline, else the caller's, else the default
        ruled = rule(tool_name, arguments) if rule is not None else None
        lifetime = ruled if ruled is not None else self._timeout if timeout is None else timeout
        request = PendingInput(
            id=request_id or IDS.next(),
            tool_name=tool_name,
            arguments=arguments,
            room_id=room_id,
            tool_call_id=tool_call_id,
            channel_id=channel_id,
            detached=detached,
            created_at=now,
            actor_id=actor_id if actor_id is not None else current_tool_actor_id(),
            channel_type=channel_type,
            expires_at=now + self._lifetime(lifetime),
            origin=origin if origin is not None else current_origin(),
        )
        if self._rules.escalation_start is not None:
            self._escalate(request, lifetime)
        entry = Entry(request)
        if self._worker.store is not None:
            await self._write(entry)
        self._active[request.id] = entry
        self._waiters.arm(entry, lifetime)
        if self.deadline_pokes or self.escalation_pokes:
            self._poke(request)
        self._scopes.announce(request)
        return request

    def _lifetime(self, seconds: float) -> timedelta:
        """`seconds` as a timedelta, kept for the next request (most share one lifetime; making
        one was a tenth of a create). One only: a caller's timeouts cannot grow a cache."""
        last = self._last
        if last[0] != seconds:
            last = self._last = (seconds, timedelta(seconds=seconds))
        return last[1]

    def _escalate(self, request: PendingInput, lifetime: float) -> None:
        """Its first escalation step's time, if its policy rule has one before the deadline."""
        start = self._rules.escalation_start
        first = start(request.tool_name, request.arguments) if start is not None else None
        if first is not None and first < lifetime:  # a step at or after the deadline: never
            request.escalation = EscalationState(0, request.created_at + timedelta(seconds=first))

    async def _write(self, entry: Entry) -> None:
        """The request's row, held by this worker; a channel closed meanwhile settles it too."""
        request = entry.request
        store = self._worker.store
        assert store is not None
        await self._holding.ensure_alive()
        await store.create_request(request, holder=self._worker.id)
        closed = self._scopes.closed_reason(request.channel_id)
        if closed is not None:  # nothing half-written is left: the row is settled too
            await store.settle(
                self._worker.settlement(request.id, RequestStatus.CANCELLED, reason=closed)
            )
            raise RuntimeError(closed)
        self._holding.hold(entry)

    def _poke(self, request: PendingInput) -> None:
        if request.expires_at is not None:
            for poke in self.deadline_pokes:
                poke(request.expires_at)
        escalation = request.next_escalation_at
        if escalation is not None:
            for poke in self.escalation_pokes:
                poke(escalation)
