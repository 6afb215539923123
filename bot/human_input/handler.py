"""`HumanInputHandler`: create, wait for, resolve and reject requests for human input.

RoomKit's primitive (docs/architecture.md), built from parts, each a plain class given what it
needs when it is made (this constructor makes them, in an order where each needs only those
before it):

- `Ledger`, `Entry`, `Deadlines` (ledger.py): the requests, each with the handler's own state
  of it (one owner), the retained outcomes, the timers;
- `Worker`, `Proposals`, `Holding` (holding.py): this worker, its store, the settles handed to
  another worker, several workers on one database with the holder deciding;
- `Observers`, `Tasks` (observers.py): the surfaces told of each transition, background work;
- `RequestRules`, `AnswerChecks` (rules.py): the policy's rules, the tools' validators;
- `Settler` (settler.py): the one transition out of pending, for every verb, in four steps
  (claim, record, apply, tell);
- `Wait`, `Waiters` (waiter.py): wait(); `Scopes`, `Creator` (creator.py): channels,
  notifiers, close, and create().

With a store attached, the database is the source of truth: every transition is a row before
anyone is told. A policy's rules for requests come in as `RequestRules` (rules.py).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import Any

from bot.human_input.carried import TraceCarrier
from bot.human_input.creator import NOTIFIER_BUDGET_SECONDS, Creator, Poke, Scopes
from bot.human_input.holding import HOLD_SECONDS, RECHECK_SECONDS, Holding, Worker
from bot.human_input.ledger import Deadlines, Ledger
from bot.human_input.observers import Observers, Tasks
from bot.human_input.ports import HandlerStore
from bot.human_input.rules import NO_RULES, AnswerChecks, RequestRules
from bot.human_input.settler import Settler
from bot.human_input.snapshots import (
    AnswerValidator,
    AudienceView,
    Notifier,
    Observer,
    RenderState,
    RequestUpdate,
    TallyView,
)
from bot.human_input.waiter import Wait, Waiters
from bot.records import Origin, PendingInput, RequestStatus

DEFAULT_TIMEOUT_SECONDS = 300.0


class HumanInputHandler:
    """Create, wait for, resolve and reject requests for human input.

    `retention` is how many outcomes stay replayable once wait() has retired their request
    (0: none). With a `store`, `hold_seconds` bounds how long a dead worker's requests wait
    before the other workers settle them, `recheck_seconds` how long a wait here on another
    worker's request misses its settle's lost NOTIFY (bot/human_input/holding.py); `worker_id`
    names this worker in the store (unique per process by default). `rules`: a policy's
    deadlines, default answers, escalations and audiences (none by default)."""

    def __init__(
        self,
        retention: int = 128,
        *,
        store: HandlerStore | None = None,
        default_timeout: float = DEFAULT_TIMEOUT_SECONDS,
        notifier_budget: float = NOTIFIER_BUDGET_SECONDS,
        hold_seconds: float = HOLD_SECONDS,
        recheck_seconds: float = RECHECK_SECONDS,
        worker_id: str | None = None,
        rules: RequestRules = NO_RULES,
    ) -> None:
        self._tasks = tasks = Tasks()
        self._ledger = ledger = Ledger(retention)
        self._worker = worker = Worker(worker_id, hold_seconds, store, recheck_seconds)
        self._observers = observers = Observers(tasks, rules.audience)
        self._checks = checks = AnswerChecks(rules.expiry_answer)
        self._settler = settler = Settler(worker, ledger, checks, observers, tasks)
        self._holding = holding = Holding(worker, ledger, settler.follow, tasks)
        self._deadlines = deadlines = Deadlines(settler.expire)
        self._waiters = waiters = Waiters(ledger, deadlines, settler, holding, tasks)
        self._scopes = scopes = Scopes(ledger, settler, observers, notifier_budget)
        self._creator = Creator(holding, waiters, scopes, rules, default_timeout)

    # -- what it is attached to -----------------------------------------------------------------

    @property
    def store(self) -> HandlerStore | None:
        return self._worker.store

    @property
    def worker_id(self) -> str:
        return self._worker.id

    def attach_store(self, store: HandlerStore) -> None:
        """Keep requests in `store` from now on (a Bridge with a store adopting a handler made
        without one, as RoomKit's Quick Start makes it); requests made before stay in memory."""
        self._worker.attach(store)

    def add_deadline_listener(self, poke: Poke) -> Callable[[], None]:
        """`poke(expires_at)` for each request created here (a durable deadline sweep sleeping
        until the earliest); returns a function that stops it."""
        return _listen(self._creator.deadline_pokes, poke)

    def add_escalation_listener(self, poke: Poke) -> Callable[[], None]:
        """`poke(at)` for each request created here with an escalation step due at `at`."""
        return _listen(self._creator.escalation_pokes, poke)

    def suspend(self) -> None:
        """The worker shuts down: a wait cut from now on leaves its request pending (and
        unheld), for the worker that resumes the run, instead of withdrawing it."""
        self._waiters.suspend()

    def carry_traces(self, carrier: TraceCarrier) -> None:
        """Settles handed to the holder on another worker carry their trace (carried.py)."""
        self._worker.carrier = carrier

    # -- RoomKit's API ----------------------------------------------------------------------------

    @property
    def pending(self) -> dict[str, PendingInput]:
        """Snapshot of the requests still waiting for an answer."""
        return self._ledger.pending()

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
        return await self._creator.create(
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
        origin: Origin | None = None,
    ) -> PendingInput:
        """Same, for a request nobody will wait() on: its creator must release() it.
        `request_id` is the id to give it (a door reserves it first); a new one otherwise.
        `origin`: the door and token that asked (its audit row says so)."""
        return await self._creator.create(
            tool_name, arguments, room_id, tool_call_id, channel_id, channel_type,
            actor_id, timeout, detached=True, request_id=request_id, origin=origin,
        )  # fmt: skip

    def wait(
        self, pending_id: str, *, timeout: float = DEFAULT_TIMEOUT_SECONDS
    ) -> Coroutine[Any, Any, str]:
        """Block until answered; raise on rejection, timeout or withdrawal. Replays outcomes.

        A coroutine, as an `async def` gives, written out by hand (bot/human_input/waiter.py):
        blocked, it is one small object rather than a frame, a future and its iterator."""
        return Wait(self._waiters, pending_id, timeout)

    def resolve(self, pending_id: str, result: str, *, by: str | None = None) -> bool:
        """Answer a request with any string. True means its waiter gets exactly this answer;
        False that it will not (unknown, already settled, refused by the tool's validator, or
        held by another worker, which decides it: use `answer()` there). Never raises for the
        answer's content."""
        return self._settler.resolve(pending_id, result, by=by)

    def reject(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """Refuse a request; its waiter raises HumanInputRejectedError(reason). True means
        that is what the waiter gets."""
        return self._settler.reject(pending_id, reason, by=by)

    def release(self, pending_id: str) -> bool:
        """Drop a request the caller owns from the active set, withdrawing it first if still
        unanswered (a stray waiter raises rather than hangs). An answer it already has stays
        replayable from the retention. True if one was dropped."""
        return self._settler.release(pending_id)

    def set_notifier(self, callback: Notifier, *, channel_id: str | None = None) -> str:
        """Set the notifier for one channel (or the default) and reopen that scope; returns
        the registration's token (for `close(registration=)`)."""
        return self._scopes.set_notifier(callback, channel_id=channel_id)

    async def close(
        self, *, channel_id: str | None = None, registration: str | None = None
    ) -> None:
        """Withdraw active work and refuse later creates, globally or for one channel; cut the
        notifiers still running for it. With `registration`, only while that registration
        (set_notifier's token) still owns the channel."""
        closed = await self._scopes.close(channel_id, registration)
        if closed and channel_id is None:
            self._holding.stop()

    async def drain(self) -> None:
        """Wait until every settle is recorded and every observer has been told (returns at
        once when called from inside a notifier or an observer, which it would wait for)."""
        await self._tasks.drain()

    # -- answers ----------------------------------------------------------------------------------

    def set_answer_validator(self, tool_name: str, validator: AnswerValidator) -> None:
        """Check (and normalise) answers to `tool_name`: the validator returns the answer as
        stored, or raises (AnswerInvalidError) to refuse it. Only tools whose answer model the
        project defines register one; any other tool's answer is taken verbatim."""
        self._checks.set_validator(tool_name, validator)

    def set_expiry_validator(self, tool_name: str, validator: AnswerValidator) -> None:
        """Check a policy's default answer to `tool_name` at the deadline with `validator`
        rather than the one for people's answers (an approval gate's default may decline,
        which a person does by declining, not by answering)."""
        self._checks.set_expiry_validator(tool_name, validator)

    async def answer(
        self,
        pending_id: str,
        result: str,
        *,
        by: str | None = None,
        by_detail: Mapping[str, str] | None = None,
        known: PendingInput | None = None,
    ) -> bool:
        """Resolve and return once the outcome is recorded, True if it is this answer; works
        for requests held by other workers and not in memory here. The answer is checked by
        the tool's validator first: AnswerInvalidError (nothing is settled) if it refuses.
        `by_detail` (a display name, the surface) goes to the audit row. `known`: the request
        as the caller just read it from the store (not read again); settled in place if this
        answer settles it and it is not in memory here."""
        return await self._settler.settle_recorded(
            pending_id, RequestStatus.RESOLVED, result, None, by, by_detail, known
        )

    async def decline(
        self,
        pending_id: str,
        reason: str = "",
        *,
        by: str | None = None,
        by_detail: Mapping[str, str] | None = None,
        known: PendingInput | None = None,
    ) -> bool:
        """Reject and return once the outcome is recorded; works for requests not in memory
        (`known` as for `answer`)."""
        return await self._settler.settle_recorded(
            pending_id, RequestStatus.REJECTED, None, reason, by, by_detail, known
        )

    async def cancel(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """Withdraw and return once recorded (its requester gave up on it); works for
        requests not in memory. Its message says it was cancelled."""
        return await self._settler.settle_recorded(
            pending_id, RequestStatus.CANCELLED, None, reason, by
        )

    async def undeliverable(self, pending_id: str, reason: str) -> bool:
        """The request could not be shown to anyone (a surface's post failed for good): settle
        it as undeliverable at once, rather than at its deadline; its waiter raises
        UndeliverableError(reason) and the audit log keeps the reason. Returns once recorded,
        True if this settled it (the same compare-and-set as every settle)."""
        return await self._settler.settle_recorded(
            pending_id, RequestStatus.UNDELIVERABLE, None, reason, None
        )

    async def expire_record(self, record: PendingInput) -> None:
        """Time out a request whose durable deadline passed (the deadline scheduler calls it).
        One held by a live worker is left to that worker's own timer."""
        await self._settler.expire_record(record)

    async def follow(self, request_id: str) -> None:
        """Something happened to a request in another process (its NOTIFY arrived): wake the
        proposers here waiting on it; as its holder, apply the first proposal waiting; else
        take up the outcome another worker recorded. Observers were told by the worker that
        wrote it, so they are not told here (if that was this worker, its NOTIFY heard before
        its write returned, the write's caller tells them: `Settler.apply_written`)."""
        await self._settler.follow(request_id)

    # -- requests as this worker knows them -------------------------------------------------------

    async def request_for_tool_call(self, tool_call_id: str) -> str | None:
        """The id of the request a tool call made (in memory, else in the store), or None."""
        request = self._ledger.for_tool_call(tool_call_id)
        if request is not None:
            return request.id
        store = self._worker.store
        if store is None:
            return None
        record = await store.request_for_tool_call(tool_call_id)
        return record.id if record is not None else None

    async def request(self, pending_id: str) -> PendingInput | None:
        """The request as this worker knows it: in memory (open, or settled and retained),
        else its row in the store; None if neither has it."""
        request = self._ledger.find(pending_id)
        store = self._worker.store
        if request is None and store is not None:
            request = await store.get_request(pending_id)
        return request

    def asked(self, tool_call_id: str) -> bool:
        """Whether this process made a request for this tool call."""
        return self._ledger.for_tool_call(tool_call_id) is not None

    # -- observers --------------------------------------------------------------------------------

    def add_observer(self, observer: Observer) -> Callable[[], None]:
        """Hear every transition of every request; returns a function that stops it."""
        return self._observers.add(observer)

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
        self._observers.tell(RequestUpdate.of(call, RenderState.IN_PROGRESS))

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
        self._observers.tell(RequestUpdate.of(call, RenderState.CANCELLED))

    async def show_run_outcome(self, pending_id: str, run_outcome: str) -> None:
        """Show what came of a settled request's answer (a gated tool's run: "ok", or its
        error) under it: observers are told the request again, after its earlier updates.
        The store's row is the caller's to write (with the run it records)."""
        request = await self.request(pending_id)
        if request is None:
            return
        request.run_outcome = run_outcome
        self._observers.notify(request)

    async def show_tally(self, pending_id: str, tally: TallyView) -> None:
        """Show the votes so far on a request still open (a rule needing several people,
        bot/policies/tally.py): observers are told the request again, after its earlier
        updates, with `tally`, so every copy of its message shows it. The votes are rows the
        caller wrote first; any worker may tell it (its surfaces edit the stored message)."""
        request = await self.request(pending_id)
        if request is not None and request.status is RequestStatus.PENDING:
            self._observers.notify(request, tally)

    def show_again(
        self,
        record: PendingInput,
        tally: TallyView | None = None,
        audience: AudienceView | None = None,
    ) -> None:
        """Show an open request again as `record` (just read from the store) has it: its
        votes so far (`tally`), a step of its escalation (`audience.fired`). Observers are
        told after its earlier updates; any worker may tell it (its surfaces edit the stored
        message). The copy held here learns how far the escalation went."""
        entry = self._ledger.active.get(record.id)
        held = entry.request if entry is not None else None
        if held is not None and record.escalation_step > held.escalation_step:
            held.escalation = record.escalation
        shown = held if held is not None else record
        if shown.status is RequestStatus.PENDING and record.status is RequestStatus.PENDING:
            self._observers.notify(shown, tally, audience)


def _listen(listeners: list[Poke], poke: Poke) -> Callable[[], None]:
    listeners.append(poke)
    return lambda: listeners.remove(poke)
