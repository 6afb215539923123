"""Creating a request: the policy's rules applied, its row written, its deadline armed, the
observers and the channel's notifier told.

With a store the row (and its `created` audit row) is written before anyone is told, by the
worker that then holds it (bot/human_input/holding.py). The durable timers elsewhere (the
deadline sweep, the escalation steps) hear of each new request's times from here.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from bot.human_input.holding import Holding
from bot.human_input.ledger import Entry, Ledger
from bot.human_input.observers import Observers
from bot.human_input.rules import RequestRules
from bot.human_input.scopes import Scopes
from bot.human_input.waiters import Waiters
from bot.human_input.worker import Worker
from bot.records import EscalationState, Origin, PendingInput, RequestStatus
from bot.tools.context import current_origin, current_tool_actor_id
from bot.words.visible_text import visible_values

Poke = Callable[[datetime], None]
"""A durable timer told of a time a new request falls due (its deadline, an escalation step)."""


class Creator:
    """Makes requests, and tells the durable timers listening when they fall due."""

    def __init__(
        self,
        worker: Worker,
        ledger: Ledger,
        scopes: Scopes,
        holding: Holding,
        waiters: Waiters,
        observers: Observers,
        rules: RequestRules,
        default_timeout: float,
    ) -> None:
        self._worker = worker
        self._active = ledger.active
        self._scopes = scopes
        self._holding = holding
        self._waiters = waiters
        self._observers = observers
        self._rules = rules
        self._timeout = default_timeout
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
            id=request_id or secrets.token_hex(12),
            tool_name=tool_name,
            arguments=arguments,
            room_id=room_id,
            tool_call_id=tool_call_id,
            channel_id=channel_id,
            detached=detached,
            created_at=now,
            actor_id=actor_id if actor_id is not None else current_tool_actor_id(),
            channel_type=channel_type,
            expires_at=now + timedelta(seconds=lifetime),
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
        self._observers.notify(request)
        self._scopes.start_notifier(request)
        return request

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
