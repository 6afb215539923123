"""The human-input primitive: a tool call that pauses until a person answers.

Every request settles exactly once: resolve, reject, timeout, release, close and a cancelled
wait race for one compare-and-set. In memory that is a status check on the event loop; with a
store attached, the database's conditional UPDATE decides and the waiter is told after the row
is written (DESIGN.md §3). Observers (the chat surfaces) hear every transition.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import secrets
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from contextvars import Context, ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from enum import StrEnum
from typing import Any

from bot.errors import HumanInputRejectedError
from bot.records import RequestRecord, RequestStatus, RequestStore, Settlement
from bot.tool_context import current_tool_actor_id

log = logging.getLogger(__name__)

PendingInputStatus = RequestStatus

DENIED_BY_HOOK = "Denied by ON_USER_INPUT_REQUIRED hook"
NOTIFIER_BUDGET_SECONDS = 30.0
DEFAULT_TIMEOUT_SECONDS = 300.0

# Set inside the handler's own callbacks (notifiers, observers): a close() or drain() from there
# must not wait for the very callback that called it.
_in_callback: ContextVar[bool] = ContextVar("hitl_in_callback", default=False)


class RenderState(StrEnum):
    """What a surface shows for a request: the seed's three states plus our three endings."""

    IN_PROGRESS = "inProgress"
    EXECUTING = "executing"
    COMPLETE = "complete"
    REJECTED = "rejected"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


_STATE_OF_STATUS = {
    RequestStatus.PENDING: RenderState.EXECUTING,
    RequestStatus.RESOLVED: RenderState.COMPLETE,
    RequestStatus.REJECTED: RenderState.REJECTED,
    RequestStatus.TIMED_OUT: RenderState.EXPIRED,
    RequestStatus.CANCELLED: RenderState.CANCELLED,
}


def timeout_message(seconds: float, tool_name: str) -> str:
    return f"Human input timed out after {seconds:g}s for tool '{tool_name}'"


@dataclass(slots=True)
class PendingInput:
    """One request for human input. Fields after `settled_at` are the handler's own."""

    pending_id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str = ""
    tool_call_id: str = ""
    channel_id: str = ""
    status: RequestStatus = RequestStatus.PENDING
    result: str | None = None
    detached: bool = False
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    actor_id: str | None = None
    channel_type: str = "ai"
    expires_at: datetime | None = None
    reason: str | None = None
    settled_by: str | None = None
    settled_at: datetime | None = None
    # A future per blocked wait() (a list only for a second one): cancelling one waiter leaves
    # the others waiting.
    _waiters: asyncio.Future[None] | list[asyncio.Future[None]] | None = field(
        default=None, repr=False, compare=False
    )
    _timer: asyncio.TimerHandle | None = field(default=None, repr=False, compare=False)
    _timer_seconds: float = field(default=0.0, repr=False, compare=False)
    _claimed: bool = field(default=False, repr=False, compare=False)
    # Updates not yet delivered to the observers, while a delivery is running (else None).
    _updates: list[RequestUpdate] | None = field(default=None, repr=False, compare=False)

    @property
    def lifetime_seconds(self) -> float | None:
        if self.expires_at is None:
            return None
        return (self.expires_at - self.created_at).total_seconds()


@dataclass(frozen=True, slots=True)
class PendingInputEvent:
    """What the notifier (ON_USER_INPUT_REQUIRED) is told about a new request."""

    pending_id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str
    tool_call_id: str
    channel_id: str
    channel_type: str
    actor_id: str | None
    created_at: datetime
    expires_at: datetime | None


@dataclass(frozen=True, slots=True)
class RequestUpdate:
    """A transition an observer (a chat surface) renders: a snapshot, never the live request."""

    state: RenderState
    pending_id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str
    tool_call_id: str
    channel_id: str
    channel_type: str
    actor_id: str | None
    created_at: datetime
    expires_at: datetime | None = None
    result: str | None = None
    reason: str | None = None
    settled_by: str | None = None
    settled_at: datetime | None = None

    @classmethod
    def of(cls, request: PendingInput | RequestRecord) -> RequestUpdate:
        pending_id = request.pending_id if isinstance(request, PendingInput) else request.id
        return cls(
            state=_STATE_OF_STATUS[request.status],
            pending_id=pending_id,
            tool_name=request.tool_name,
            arguments=request.arguments,
            room_id=request.room_id,
            tool_call_id=request.tool_call_id,
            channel_id=request.channel_id,
            channel_type=request.channel_type,
            actor_id=request.actor_id,
            created_at=request.created_at,
            expires_at=request.expires_at,
            result=request.result,
            reason=request.reason,
            settled_by=request.settled_by,
            settled_at=request.settled_at,
        )


Notifier = Callable[[PendingInputEvent], Awaitable[bool | None] | bool | None]
Observer = Callable[[RequestUpdate], Awaitable[None]]
AnswerValidator = Callable[[dict[str, Any], str], str]
"""(the request's arguments, the raw answer) -> the answer as stored; raises AnswerInvalidError."""


@dataclass(slots=True)
class _Scope:
    """A channel scope (or the default one, key None): its notifier and whether it is closed."""

    notifier: Notifier | None = None
    token: str | None = None
    closed: bool = False


class HumanInputHandler:
    """Create, wait for, resolve and reject requests for human input."""

    def __init__(
        self,
        retention: int = 128,
        *,
        store: RequestStore | None = None,
        default_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        notifier_budget: float = NOTIFIER_BUDGET_SECONDS,
    ) -> None:
        self.retention = retention
        self.store = store
        self.default_timeout = default_timeout
        self.notifier_budget = notifier_budget
        self._active: dict[str, PendingInput] = {}
        self._settled: OrderedDict[str, PendingInput] = OrderedDict()
        self._scopes: dict[str | None, _Scope] = {None: _Scope()}
        self._observers: list[Observer] = []
        self._validators: dict[str, AnswerValidator] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._notifier_tasks: set[asyncio.Task[Any]] = set()
        self.on_deadline_armed: Callable[[datetime], None] | None = None
        # Set while the worker shuts down: a wait cut then leaves its request pending, for the
        # worker that resumes the run (DESIGN.md §3), instead of withdrawing it.
        self.suspended = False
        # Shared by every request's timer, rather than a bound method and a context copy each.
        self._expire_callback = self._expire
        self._timer_context = Context()

    # -- registration -------------------------------------------------------------------

    def set_notifier(self, callback: Notifier, *, channel_id: str | None = None) -> str:
        """Set the notifier for one channel (or the default) and reopen that scope."""
        token = secrets.token_hex(8)
        self._scopes[channel_id] = _Scope(notifier=callback, token=token)
        return token

    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """Hear every transition of every request; returns a function that stops it."""
        self._observers.append(observer)
        return lambda: self._observers.remove(observer)

    def set_answer_validator(self, tool_name: str, validator: AnswerValidator) -> None:
        """Check (and normalise) answers to `tool_name`; a validator raises AnswerInvalidError."""
        self._validators[tool_name] = validator

    async def request_for_tool_call(self, tool_call_id: str) -> str | None:
        """The id of the request a tool call made (in memory, else in the store), or None."""
        request = self._held_for_tool_call(tool_call_id)
        if request is not None:
            return request.pending_id
        if self.store is None:
            return None
        record = await self.store.request_for_tool_call(tool_call_id)
        return record.id if record is not None else None

    def asked(self, tool_call_id: str) -> bool:
        """Whether this process made a request for this tool call."""
        return self._held_for_tool_call(tool_call_id) is not None

    def _held_for_tool_call(self, tool_call_id: str) -> PendingInput | None:
        """A scan of the requests in memory: for rare paths only (resume, a dropped call)."""
        for request in (*self._active.values(), *self._settled.values()):
            if request.tool_call_id == tool_call_id:
                return request
        return None

    @property
    def pending(self) -> dict[str, PendingInput]:
        """Snapshot of the requests still waiting for an answer."""
        return {k: p for k, p in self._active.items() if p.status is RequestStatus.PENDING}

    # -- create ---------------------------------------------------------------------------

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
    ) -> PendingInput:
        """Same, for a request nobody will wait() on: its creator must release() it."""
        return await self._create(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type,
            actor_id, timeout, detached=True,
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
    ) -> PendingInput:
        self._check_open(channel_id)
        now = datetime.now(UTC)
        lifetime = self.default_timeout if timeout is None else timeout
        request = PendingInput(
            pending_id=secrets.token_hex(12),
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
        if self.store is not None:
            await self.store.create_request(_to_record(request))
            closed = self._closed_reason(channel_id)  # closed while the row was being written
            if closed is not None:  # nothing half-written is left: the row is settled too
                await self.store.settle(
                    _settlement(request.pending_id, RequestStatus.CANCELLED, None, closed, None)
                )
                raise RuntimeError(closed)
        self._active[request.pending_id] = request
        self._arm_timer(request, lifetime)
        if self.on_deadline_armed is not None and request.expires_at is not None:
            self.on_deadline_armed(request.expires_at)
        self._notify_observers(request)
        scope = self._scopes.get(channel_id) or self._scopes[None]
        if scope.notifier is not None:
            task = self._spawn(self._run_notifier(scope.notifier, request))
            self._notifier_tasks.add(task)
            task.add_done_callback(self._notifier_tasks.discard)
        return request

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

    async def _run_notifier(self, notifier: Notifier, request: PendingInput) -> None:
        """Run the notifier beside the wait; False denies. A hang or a raise denies nothing."""
        event = _event_of(request)
        _in_callback.set(True)
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

    # -- wait -------------------------------------------------------------------------------

    async def wait(self, pending_id: str, *, timeout: float = DEFAULT_TIMEOUT_SECONDS) -> str:
        """Block until answered; raise on rejection, timeout or withdrawal. Replays outcomes."""
        request = self._active.get(pending_id) or self._settled.get(pending_id)
        if request is None and self.store is not None:
            request = await self._load(pending_id)
            if request is not None and request.status is RequestStatus.PENDING:
                # A settle by another worker that committed while we read the row notified
                # before the request was ours to wake: read it once more, behind that.
                self._spawn(self.follow(pending_id))
        if request is None:
            raise ValueError(f"Unknown human input request: {pending_id}")
        if request.status is RequestStatus.PENDING:
            # A blocked waiter is its task, this frame and one future, no helper coroutine
            # (see bench/human_input_bench.py).
            waiter = self._add_waiter(request, timeout)
            try:
                await waiter
            except asyncio.CancelledError:
                self._withdraw_waiter(request, waiter)
                raise
        return _outcome(request)

    def _add_waiter(self, request: PendingInput, timeout: float) -> asyncio.Future[None]:
        """A future for one more waiter; the request's deadline moves in to `timeout` if sooner."""
        loop = asyncio.get_running_loop()
        timer = request._timer
        if timer is None or timer.when() > loop.time() + timeout:
            self._arm_timer(request, timeout)
        waiter: asyncio.Future[None] = loop.create_future()
        waiters = request._waiters
        if waiters is None:
            request._waiters = waiter
        elif isinstance(waiters, list):
            waiters.append(waiter)
        else:
            request._waiters = [waiters, waiter]
        return waiter

    def _withdraw_waiter(self, request: PendingInput, waiter: asyncio.Future[None]) -> None:
        """A cancelled wait(): the last waiter to go withdraws the request."""
        waiters = request._waiters
        if waiters is waiter:
            request._waiters = None
        elif isinstance(waiters, list):
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                request._waiters = None
        if request._waiters is None and request.status is RequestStatus.PENDING:
            if self.suspended:
                self._release_memory(request)
            else:
                self._settle(request, RequestStatus.CANCELLED, reason="Human input withdrawn")

    def _release_memory(self, request: PendingInput) -> None:
        """Forget a request without settling it: its row stays pending for another worker."""
        if request._timer is not None:
            request._timer.cancel()
            request._timer = None
        self._active.pop(request.pending_id, None)

    def _arm_timer(self, request: PendingInput, seconds: float) -> None:
        if request._timer is not None:
            request._timer.cancel()
        request._timer_seconds = seconds
        request._timer = asyncio.get_running_loop().call_later(
            seconds, self._expire_callback, request, context=self._timer_context
        )

    def _expire(self, request: PendingInput) -> None:
        request._timer = None
        reason = timeout_message(request._timer_seconds, request.tool_name)
        self._settle(request, RequestStatus.TIMED_OUT, reason=reason)

    async def _load(self, pending_id: str) -> PendingInput | None:
        """Bring a request written by another process (or before a restart) into memory."""
        assert self.store is not None
        record = await self.store.get_request(pending_id)
        if record is None:
            return None
        existing = self._active.get(pending_id) or self._settled.get(pending_id)
        if existing is not None:  # loaded meanwhile by another caller
            return existing
        request = _from_record(record)
        if request.status is RequestStatus.PENDING:
            self._active[pending_id] = request
            remaining = (record.expires_at or datetime.now(UTC)) - datetime.now(UTC)
            self._arm_timer(request, max(remaining.total_seconds(), 0.0))
            request._timer_seconds = request.lifetime_seconds or 0.0
        else:
            self._retain(request)
        return request

    # -- settle -------------------------------------------------------------------------

    def resolve(self, pending_id: str, result: str, *, by: str | None = None) -> bool:
        """Answer a request. True means the waiter gets this answer."""
        request = self._active.get(pending_id)
        if request is None or not self._can_settle(request):
            return False
        result = self._validated(request, result)
        return self._settle(request, RequestStatus.RESOLVED, result=result, by=by)

    def reject(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """Refuse a request; its waiter raises HumanInputRejectedError(reason)."""
        request = self._active.get(pending_id)
        if request is None or not self._can_settle(request):
            return False
        return self._settle(request, RequestStatus.REJECTED, reason=reason, by=by)

    def release(self, pending_id: str) -> bool:
        """Drop a request the caller owns, withdrawing it first if still unanswered."""
        request = self._active.get(pending_id)
        if request is not None:
            self._settle(request, RequestStatus.CANCELLED, reason="Human input released")
            return True
        settled = self._settled.get(pending_id)
        if settled is not None and settled.detached:
            del self._settled[pending_id]  # its creator is done with it: nothing to replay
            return True
        return False

    async def close(
        self, *, channel_id: str | None = None, registration: str | None = None
    ) -> None:
        """Withdraw active work and refuse later creates, globally or for one channel."""
        scope = self._scopes.get(channel_id)
        if registration is not None and (scope is None or scope.token != registration):
            return  # another registration owns this channel now
        self._scopes[channel_id] = _Scope(closed=True)
        where = "handler" if channel_id is None else f"channel '{channel_id}'"
        for request in list(self._active.values()):
            if channel_id in (None, request.channel_id):
                self._settle(request, RequestStatus.CANCELLED, reason=f"Human input {where} closed")
        if channel_id is None:
            # A notifier may hold its budget (30 s) on a request that is now withdrawn.
            current = asyncio.current_task()
            for task in list(self._notifier_tasks):
                if task is not current:
                    task.cancel()
            await self._drain_tasks()

    async def answer(self, pending_id: str, result: str, *, by: str | None = None) -> bool:
        """Resolve and return once the outcome is recorded; works for requests not in memory."""
        return await self._settle_awaited(pending_id, RequestStatus.RESOLVED, result, None, by)

    async def decline(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """Reject and return once the outcome is recorded; works for requests not in memory."""
        return await self._settle_awaited(pending_id, RequestStatus.REJECTED, None, reason, by)

    async def expire_record(self, record: RequestRecord) -> None:
        """Time out a request whose durable deadline passed (the deadline scheduler calls it)."""
        reason = timeout_message(_lifetime(record), record.tool_name)
        request = self._active.get(record.id)
        if request is not None:
            if self._can_settle(request):
                self._settle(request, RequestStatus.TIMED_OUT, reason=reason)
            return
        await self._settle_stored(record, RequestStatus.TIMED_OUT, None, reason, None)

    async def _settle_awaited(
        self,
        pending_id: str,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None,
    ) -> bool:
        request = self._active.get(pending_id)
        if request is None and self.store is not None:
            record = await self.store.get_request(pending_id)
            if record is None or record.status is not RequestStatus.PENDING:
                return False
            if record.id not in self._active:  # still held by no one here
                if result is not None:
                    result = self._validated(record, result)
                return await self._settle_stored(record, status, result, reason, by)
            request = self._active[record.id]
        if request is None or not self._can_settle(request):
            return False
        if result is not None:
            result = self._validated(request, result)
        settlement = _settlement(request.pending_id, status, result, reason, by)
        if self.store is None:
            self._apply(request, settlement)
            return True
        request._claimed = True
        return await self._persist_and_apply(request, settlement)

    def _can_settle(self, request: PendingInput) -> bool:
        return request.status is RequestStatus.PENDING and not request._claimed

    def _validated(self, request: PendingInput | RequestRecord, result: str) -> str:
        validator = self._validators.get(request.tool_name)
        return validator(request.arguments, result) if validator is not None else result

    def _settle(
        self,
        request: PendingInput,
        status: RequestStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
    ) -> bool:
        """The single transition out of pending. With a store, the row is written first."""
        if not self._can_settle(request):
            return False
        settlement = _settlement(request.pending_id, status, result, reason, by)
        if self.store is None:
            self._apply(request, settlement)
        else:
            request._claimed = True
            self._spawn(self._persist_and_apply(request, settlement))
        return True

    async def _persist_and_apply(self, request: PendingInput, settlement: Settlement) -> bool:
        store = self.store
        assert store is not None
        won = await _with_retries(lambda: store.settle(settlement))
        if won is None:
            log.error("could not record %s of %s; applied in memory only",
                      settlement.status, request.pending_id)  # fmt: skip
            self._apply(request, settlement)
            return True
        if won:
            self._apply(request, settlement)
            return True
        record = await store.get_request(request.pending_id)  # another worker won
        if record is not None and record.status is not RequestStatus.PENDING:
            self._apply(request, _settlement_of(record), tell=False)  # the winner told them
            return False
        # No settled row to follow (it was never written, or is gone): settle here rather than
        # leave the request claimed, unanswerable and its waiters blocked for good.
        log.error("no settled row for %s; applied %s in memory only",
                  request.pending_id, settlement.status)  # fmt: skip
        self._apply(request, settlement)
        return True

    async def _settle_stored(
        self,
        record: RequestRecord,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None,
    ) -> bool:
        """Settle a request this process does not hold: the row decides, observers hear it."""
        assert self.store is not None
        settlement = _settlement(record.id, status, result, reason, by)
        if not await self.store.settle(settlement):
            return False
        request = self._active.get(record.id)
        if request is not None:  # a wait() loaded it meanwhile: wake it now, not at its deadline
            request._claimed = False
            self._apply(request, settlement)
            return True
        _copy_settlement(record, settlement)
        self._retain(_from_record(record))  # a wait() loading it meanwhile finds it settled
        self._tell_observers(RequestUpdate.of(record))
        return True

    async def follow(self, request_id: str) -> None:
        """Take up an outcome another worker recorded (its NOTIFY arrived): wake our waiters.

        The surfaces were told by the worker that won the settle, so they are not told again.
        """
        request = self._active.get(request_id)
        if request is None or request.status is not RequestStatus.PENDING or self.store is None:
            return
        record = await self.store.get_request(request_id)
        if record is not None and record.status is not RequestStatus.PENDING:
            self._apply(request, _settlement_of(record), tell=False)

    def _apply(self, request: PendingInput, settlement: Settlement, *, tell: bool = True) -> None:
        """Write the outcome on the request, wake its waiters and (unless told) the observers."""
        if request.status is not RequestStatus.PENDING:
            return
        _copy_settlement(request, settlement)
        request._claimed = False
        if request._timer is not None:
            request._timer.cancel()
            request._timer = None
        waiters, request._waiters = request._waiters, None
        for waiter in waiters if isinstance(waiters, list) else (waiters,):
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
        self._active.pop(request.pending_id, None)
        self._retain(request)
        if tell:
            self._notify_observers(request)

    def _retain(self, request: PendingInput) -> None:
        if self.retention <= 0:
            return
        self._settled[request.pending_id] = request
        self._settled.move_to_end(request.pending_id)
        while len(self._settled) > self.retention:
            self._settled.popitem(last=False)

    # -- observers and tasks --------------------------------------------------------------

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
        """Tell observers a human tool's call is streaming in (the seed's inProgress)."""
        self._announce(RenderState.IN_PROGRESS, tool_name, arguments, room_id, tool_call_id,
                       channel_id, channel_type, actor_id, None)  # fmt: skip

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
        self._announce(RenderState.CANCELLED, tool_name, arguments, room_id, tool_call_id,
                       channel_id, channel_type, actor_id, reason)  # fmt: skip

    def _announce(
        self,
        state: RenderState,
        tool_name: str,
        arguments: dict[str, Any],
        room_id: str,
        tool_call_id: str,
        channel_id: str,
        channel_type: str,
        actor_id: str | None,
        reason: str | None,
    ) -> None:
        update = RequestUpdate(
            state=state,
            pending_id="",
            tool_name=tool_name,
            arguments=arguments,
            room_id=room_id,
            tool_call_id=tool_call_id,
            channel_id=channel_id,
            channel_type=channel_type,
            actor_id=actor_id,
            created_at=datetime.now(UTC),
            reason=reason,
        )
        self._tell_observers(update)

    def _notify_observers(self, request: PendingInput) -> None:
        """Queue the request's current state for the observers, in order: each observer has
        finished with one update of a request before it is given the next (a surface's edit
        never overtakes the post it edits)."""
        if not self._observers:
            return
        update = RequestUpdate.of(request)
        if request._updates is not None:  # a delivery is running: it takes this one next
            request._updates.append(update)
            return
        request._updates = [update]
        self._spawn(self._deliver(request))

    async def _deliver(self, request: PendingInput) -> None:
        updates = request._updates
        try:
            while updates:
                await self._observe_all(updates.pop(0))
        finally:
            request._updates = None

    def _tell_observers(self, update: RequestUpdate) -> None:
        if self._observers:
            self._spawn(self._observe_all(update))

    async def _observe_all(self, update: RequestUpdate) -> None:
        _in_callback.set(True)
        observers = list(self._observers)
        if len(observers) == 1:
            await _observe(observers[0], update)
        elif observers:
            await asyncio.gather(*(_observe(observer, update) for observer in observers))

    def _spawn(self, coroutine: Awaitable[Any]) -> asyncio.Task[Any]:
        task: asyncio.Task[Any] = asyncio.ensure_future(coroutine)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _drain_tasks(self) -> None:
        """Let in-flight settles and observer calls finish (a close must not lose an edit).

        From inside a notifier or an observer it returns at once: waiting there would wait
        for the callback that is waiting.
        """
        if _in_callback.get():
            return
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def drain(self) -> None:
        """Wait until every settle is recorded and every observer has been told (returns at
        once when called from inside a notifier or an observer, which it would wait for)."""
        await self._drain_tasks()


async def _observe(observer: Observer, update: RequestUpdate) -> None:
    try:
        await observer(update)
    except Exception:
        log.exception("observer failed on %s of %s", update.state, update.pending_id)


async def _with_retries(call: Callable[[], Awaitable[bool]], attempts: int = 5) -> bool | None:
    """A settle the database could not take is retried with backoff; None if it never did."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception:
            log.warning("settle attempt %d failed", attempt + 1, exc_info=True)
            await asyncio.sleep(0.05 * 2**attempt)
    return None


def _settlement(
    request_id: str,
    status: RequestStatus,
    result: str | None,
    reason: str | None,
    by: str | None,
) -> Settlement:
    return Settlement(
        request_id=request_id,
        status=status,
        at=datetime.now(UTC),
        result=result,
        reason=reason,
        by=by,
    )


def _settlement_of(record: RequestRecord) -> Settlement:
    return Settlement(
        request_id=record.id,
        status=record.status,
        at=record.settled_at or datetime.now(UTC),
        result=record.result,
        reason=record.reason,
        by=record.settled_by,
    )


def _copy_settlement(target: PendingInput | RequestRecord, settlement: Settlement) -> None:
    target.status = settlement.status
    target.result = settlement.result
    target.reason = settlement.reason
    target.settled_by = settlement.by
    target.settled_at = settlement.at


def _outcome(request: PendingInput) -> str:
    """The answer of a settled request, or the error its waiters raise."""
    status, reason = request.status, request.reason or ""
    if status is RequestStatus.RESOLVED:
        return request.result or ""
    if status is RequestStatus.REJECTED:
        raise HumanInputRejectedError(reason)
    if status is RequestStatus.TIMED_OUT:
        raise TimeoutError(reason)
    raise RuntimeError(reason or "Human input request withdrawn")


def _lifetime(record: RequestRecord) -> float:
    if record.expires_at is None:
        return 0.0
    return (record.expires_at - record.created_at).total_seconds()


def _event_of(request: PendingInput) -> PendingInputEvent:
    return PendingInputEvent(
        pending_id=request.pending_id,
        tool_name=request.tool_name,
        arguments=request.arguments,
        room_id=request.room_id,
        tool_call_id=request.tool_call_id,
        channel_id=request.channel_id,
        channel_type=request.channel_type,
        actor_id=request.actor_id,
        created_at=request.created_at,
        expires_at=request.expires_at,
    )


def _to_record(request: PendingInput) -> RequestRecord:
    return RequestRecord(
        id=request.pending_id,
        tool_name=request.tool_name,
        arguments=request.arguments,
        room_id=request.room_id,
        tool_call_id=request.tool_call_id,
        channel_id=request.channel_id,
        channel_type=request.channel_type,
        actor_id=request.actor_id,
        detached=request.detached,
        created_at=request.created_at,
        expires_at=request.expires_at,
    )


def _from_record(record: RequestRecord) -> PendingInput:
    return PendingInput(
        pending_id=record.id,
        tool_name=record.tool_name,
        arguments=record.arguments,
        room_id=record.room_id,
        tool_call_id=record.tool_call_id,
        channel_id=record.channel_id,
        status=record.status,
        result=record.result,
        detached=record.detached,
        created_at=record.created_at,
        actor_id=record.actor_id,
        channel_type=record.channel_type,
        expires_at=record.expires_at,
        reason=record.reason,
        settled_by=record.settled_by,
        settled_at=record.settled_at,
    )
