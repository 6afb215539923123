"""`HumanInputHandler`: create, wait for, resolve and reject requests for human input.

RoomKit's primitive (docs/architecture.md), assembled from one module per
concern: waiting.py (wait and its cleanup), settling.py (the one transition out of pending),
scopes.py (channels, notifiers, close), holding.py (several workers on one database) and
observing.py (the surfaces). With a store attached, the database is the source of truth
(docs/architecture.md): every transition is a row before anyone is told.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from bot.human_input.base import DEFAULT_TIMEOUT_SECONDS, HOLD_SECONDS, NOTIFIER_BUDGET_SECONDS
from bot.human_input.holding import Holding
from bot.human_input.observing import Observing
from bot.human_input.scopes import Scopes
from bot.human_input.settling import Settling
from bot.human_input.waiting import Waiting
from bot.records import EscalationState, PendingInput, RequestStatus, RequestStore
from bot.tools.context import current_tool_actor_id
from bot.words.visible_text import visible_values

if TYPE_CHECKING:
    from bot.policies.escalation import Audience
    from bot.policies.tally import Tally


class HumanInputHandler(Waiting, Settling, Holding, Scopes, Observing):
    """Create, wait for, resolve and reject requests for human input.

    `retention` is how many outcomes stay replayable once wait() has retired their request
    (0: none). With a `store`, `hold_seconds` bounds how long a dead worker's requests wait
    before the other workers settle them (bot/human_input/holding.py); `worker_id` names this
    worker in the store (unique per process by default).
    """

    def __init__(
        self,
        retention: int = 128,
        *,
        store: RequestStore | None = None,
        default_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        notifier_budget: float = NOTIFIER_BUDGET_SECONDS,
        hold_seconds: float = HOLD_SECONDS,
        worker_id: str | None = None,
    ) -> None:
        super().__init__(
            retention, store, default_timeout, notifier_budget, hold_seconds, worker_id
        )

    @property
    def pending(self) -> dict[str, PendingInput]:
        """Snapshot of the requests still waiting for an answer."""
        return {k: p for k, p in self._active.items() if p.status is RequestStatus.PENDING}

    async def request_for_tool_call(self, tool_call_id: str) -> str | None:
        """The id of the request a tool call made (in memory, else in the store), or None."""
        request = self._held_for_tool_call(tool_call_id)
        if request is not None:
            return request.id
        if self.store is None:
            return None
        record = await self.store.request_for_tool_call(tool_call_id)
        return record.id if record is not None else None

    async def request(self, pending_id: str) -> PendingInput | None:
        """The request as this worker knows it: in memory (open, or settled and retained),
        else its row in the store; None if neither has it."""
        request = self._active.get(pending_id) or self._settled.get(pending_id)
        if request is None and self.store is not None:
            request = await self.store.get_request(pending_id)
        return request

    async def show_run_outcome(self, pending_id: str, run_outcome: str) -> None:
        """Show what came of a settled request's answer (a gated tool's run: "ok", or its
        error) under it: observers are told the request again, after its earlier updates.
        The store's row is the caller's to write (with the run it records)."""
        request = await self.request(pending_id)
        if request is None:
            return
        request.run_outcome = run_outcome
        self._notify_observers(request)

    async def show_tally(self, pending_id: str, tally: Tally) -> None:
        """Show the votes so far on a request still open (a rule needing several people,
        bot/policies/tally.py): observers are told the request again, after its earlier
        updates, with `tally`, so every copy of its message shows it. The votes are rows the
        caller wrote first; any worker may tell it (its surfaces edit the stored message)."""
        request = await self.request(pending_id)
        if request is not None and request.status is RequestStatus.PENDING:
            self._notify_observers(request, tally)

    def show_again(
        self, record: PendingInput, tally: Tally | None = None, audience: Audience | None = None
    ) -> None:
        """Show an open request again as `record` (just read from the store) has it: its
        votes so far (`tally`), a step of its escalation (`audience.fired`). Observers are
        told after its earlier updates; any worker may tell it (its surfaces edit the stored
        message). The copy held here learns how far the escalation went."""
        held = self._active.get(record.id)
        if held is not None and record.escalation_step > held.escalation_step:
            held.escalation = record.escalation
        shown = held if held is not None else record
        if shown.status is RequestStatus.PENDING and record.status is RequestStatus.PENDING:
            self._notify_observers(shown, tally, audience)

    def asked(self, tool_call_id: str) -> bool:
        """Whether this process made a request for this tool call."""
        return self._held_for_tool_call(tool_call_id) is not None

    def _held_for_tool_call(self, tool_call_id: str) -> PendingInput | None:
        """A scan of the requests in memory: for rare paths only (resume, a dropped call)."""
        for request in (*self._active.values(), *self._settled.values()):
            if request.tool_call_id == tool_call_id:
                return request
        return None

    async def create(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        room_id: str = "",
        tool_call_id: str = "",
        channel_id: str = "",
        channel_type: str = "ai",
        actor_id: str | None = None,
        timeout: float | None = None,
    ) -> PendingInput:
        """Register a request (answerable from here) and notify alongside; wait() cleans up."""
        return await self._create(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type,
            actor_id, timeout, detached=False,
        )  # fmt: skip

    async def create_detached(
        self,
        tool_name: str,
        arguments: dict[str, Any],
        *,
        room_id: str = "",
        tool_call_id: str = "",
        channel_id: str = "",
        channel_type: str = "ai",
        actor_id: str | None = None,
        timeout: float | None = None,
        request_id: str | None = None,
    ) -> PendingInput:
        """Same, for a request nobody will wait() on: its creator must release() it.
        `request_id` is the id to give it (a door reserves it first); a new one otherwise."""
        return await self._create(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type,
            actor_id, timeout, detached=True, request_id=request_id,
        )  # fmt: skip

    async def _create(
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
    ) -> PendingInput:
        self._check_open(channel_id)
        arguments = visible_values(arguments)  # what people read: no escapes, no bidi tricks
        now = datetime.now(UTC)
        ruled = self.lifetime_rule(tool_name, arguments) if self.lifetime_rule else None
        lifetime = (
            ruled if ruled is not None else self.default_timeout if timeout is None else timeout
        )
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
        )
        first = self.escalation_start(tool_name, arguments) if self.escalation_start else None
        if first is not None and first < lifetime:  # a step at or after the deadline: never
            request.escalation = EscalationState(0, now + timedelta(seconds=first))
        if self.store is not None:
            await self._ensure_alive()
            await self.store.create_request(request, holder=self.worker_id)
            closed = self._closed_reason(channel_id)  # closed while the row was being written
            if closed is not None:  # nothing half-written is left: the row is settled too
                await self.store.settle(
                    self._settlement(request.id, RequestStatus.CANCELLED, reason=closed)
                )
                raise RuntimeError(closed)
            self._hold(request, held=True)
        self._active[request.id] = request
        self._arm_timer(request, lifetime)
        if self.on_deadline_armed is not None and request.expires_at is not None:
            self.on_deadline_armed(request.expires_at)
        if self.on_escalation_armed is not None and request.next_escalation_at is not None:
            self.on_escalation_armed(request.next_escalation_at)
        self._notify_observers(request)
        self._start_notifier(request)
        return request
