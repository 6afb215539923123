"""The one transition out of pending, which every settle races for.

Every verb settles through here, in the same four steps: resolve, reject, release, a timeout
(here or the durable sweep's), close and a cancelled wait (`settle`: it returns once claimed),
and answer, decline, cancel and undeliverable (`settle_recorded`: it returns once recorded).

1. **Claim** (`_claim`): the request is pending and unclaimed, or this settle loses. Taken on
   the event loop, so of racing settles exactly one gets it. In memory, the claim writes the
   outcome on the request and goes to step 3: memory is the durability layer then.
2. **Record** (`record`): the store's compare-and-set, with its audit row in the same
   transaction, retried with backoff; for a request another worker holds, a proposal to that
   holder instead (`_through_holder`; the rules are holding.py's). A claimed request takes no
   other settle meanwhile.
3. **Apply** (`settled`): the outcome the row took is on the request; its deadline disarmed,
   its waiters woken, its outcome retained.
4. **Tell** (`Observers.notify`): the observers are queued the request's new state, unless
   the worker that wrote it told them.

A request only the store knows (an answer arriving at a worker that never loaded it, the
durable sweep's expiry) settles through the same steps, as a record held nowhere here.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime

from bot.human_input.checks import AnswerChecks
from bot.human_input.deadlines import disarm
from bot.human_input.ledger import Ledger
from bot.human_input.observers import Observers
from bot.human_input.proposals import Proposals
from bot.human_input.snapshots import timeout_message
from bot.human_input.tasks import Tasks
from bot.human_input.worker import Worker
from bot.records import (
    CLAIMED,
    FOREIGN,
    HELD,
    UNTOLD,
    PendingInput,
    RequestStatus,
    Settlement,
    StoreUnavailableError,
    copy_settled,
)

log = logging.getLogger("bot.human_input")

PENDING = RequestStatus.PENDING


class Settler:
    """Every settle: claims it (step 1), records it (step 2), applies and tells it (3, 4)."""

    def __init__(
        self, worker: Worker, ledger: Ledger, checks: AnswerChecks, observers: Observers,
        tasks: Tasks,
    ) -> None:  # fmt: skip
        self._worker = worker
        self._ledger = ledger
        self._active = ledger.active
        self._validators = checks.validators
        self._checks = checks
        self._observers = observers
        self._tasks = tasks
        self.proposals = Proposals(worker)

    # -- the verbs ------------------------------------------------------------------------------

    def resolve(self, pending_id: str, result: str, *, by: str | None = None) -> bool:
        """See `HumanInputHandler.resolve`."""
        request = self._active.get(pending_id)
        if request is None:
            return False
        # A pending request without flags (in memory, unclaimed) is decided here: a call less.
        if (request._flags or request.status is not PENDING) and not self.may_decide(request):
            return False
        validator = self._validators.get(request.tool_name)
        if validator is not None:
            try:
                result = validator(request.arguments, result)
            except Exception as err:
                log.info("answer to %s refused: %s", pending_id, err)
                return False
        return self.settle(request, RequestStatus.RESOLVED, result=result, by=by)

    def reject(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """See `HumanInputHandler.reject`."""
        request = self._active.get(pending_id)
        if request is None or not self.may_decide(request):
            return False
        return self.settle(request, RequestStatus.REJECTED, reason=reason, by=by)

    def release(self, pending_id: str) -> bool:
        """See `HumanInputHandler.release`."""
        request = self._active.pop(pending_id, None)
        if request is None:
            return False
        if request.status is PENDING:
            self.settle(request, RequestStatus.CANCELLED, reason="Human input released")
        return True

    def may_decide(self, request: PendingInput) -> bool:
        """Whether a synchronous settle here is the request's outcome: it is pending and not
        being settled, and no other worker decides it (bot/human_input/holding.py)."""
        flags = request._flags
        if request.status is not PENDING or flags & (CLAIMED | FOREIGN):
            return False
        if flags & HELD and not self._worker.vouches():
            log.warning("cannot vouch for the hold of %s (no recent heartbeat): use answer()",
                        request.id)  # fmt: skip
            return False
        return True

    def expire(self, request: PendingInput) -> None:
        """The request's deadline passed here (its timer): time it out, with the policy's
        default answer if it has one."""
        reason = timeout_message(request._timer_seconds, request.tool_name)
        result = self._checks.default_answer(request)
        self.settle(request, RequestStatus.TIMED_OUT, result=result, reason=reason)

    async def expire_record(self, record: PendingInput) -> None:
        """See `HumanInputHandler.expire_record`."""
        reason = timeout_message(record.lifetime_seconds or 0.0, record.tool_name)
        result = self._checks.default_answer(record)
        request = self._active.get(record.id)
        if request is None:  # held nowhere here: its row decides (a live holder's, its timer)
            request = record
            request._flags = 0
        claimed = self._claim(request, RequestStatus.TIMED_OUT, result, reason)
        if isinstance(claimed, Settlement):
            await self.record(request, claimed)

    # -- step 1: the claim ------------------------------------------------------------------------

    def settle(
        self,
        request: PendingInput,
        status: RequestStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        proposal: str | None = None,
    ) -> bool:
        """Claim; with a store, step 2 runs as a task. True if this settle claimed the
        request (its outcome is the row's, written or handed over)."""
        claimed = self._claim(request, status, result, reason, by, proposal=proposal)
        if isinstance(claimed, Settlement):
            self._tasks.spawn(self.record(request, claimed))
            return True
        return claimed

    async def settle_recorded(
        self,
        pending_id: str,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None,
        by_detail: Mapping[str, str] | None = None,
        known: PendingInput | None = None,
    ) -> bool:
        """Claim, validate and record; True once recorded as this settle. A person's answer
        (`by`) the store never took raises StoreUnavailableError, the request left open."""
        request = self._active.get(pending_id)
        if request is None and self._worker.store is not None:
            record = (
                known if known is not None else await self._worker.store.get_request(pending_id)
            )
            request = self._active.get(pending_id)  # a wait() may have loaded it meanwhile
            if request is None and record is not None and record.status is PENDING:
                request = record  # held nowhere here: settled by a proposal, the row decides
                request._flags = FOREIGN
        if request is None or request.status is not PENDING or request._flags & CLAIMED:
            return False
        if result is not None:
            result = self._checks.validated(request, result)
        claimed = self._claim(request, status, result, reason, by, by_detail)
        if isinstance(claimed, Settlement):
            return await self.record(request, claimed, must_record=by is not None)
        return claimed

    def _claim(
        self,
        request: PendingInput,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None = None,
        by_detail: Mapping[str, str] | None = None,
        proposal: str | None = None,
    ) -> Settlement | bool:
        """False if another settle came first; True once settled in memory (no store: the
        claim is the settle); else the claimed settlement, for step 2 to record."""
        if request.status is not PENDING or request._flags & CLAIMED:
            return False
        if self._worker.store is None:
            # In memory the claim is the settle: written on the request directly (a Settlement
            # built only to be copied field by field cost more than the rest of a resolve()).
            request.status = status
            request.result = result
            request.reason = reason
            request.settled_by = by
            request.settled_at = datetime.now(UTC)
            self.settled(request)
            return True
        request._flags |= CLAIMED
        return self._worker.settlement(
            request.id, status, result, reason, by, proposal=proposal, by_detail=by_detail
        )

    # -- step 2: the record -----------------------------------------------------------------------

    async def record(
        self, request: PendingInput, settlement: Settlement, *, must_record: bool = False
    ) -> bool:
        """Write a claimed settle, then apply what the row says. True if it won.

        A settle the database never took is applied in memory only (a timeout, a withdrawal:
        the waiter must wake), except a person's answer (`must_record`): that one is not
        taken, the request stays open, and the caller gets StoreUnavailableError, so nobody is
        told "answered" when nothing was recorded.
        """
        store = self._worker.store
        assert store is not None
        if request._flags & FOREIGN:
            return await self._through_holder(request, settlement, must_record)
        won = await _with_retries(lambda: store.settle(settlement))
        if won is None and must_record:
            request._flags &= ~CLAIMED
            raise StoreUnavailableError(f"could not record the answer to {request.id}")
        if won is None:
            log.error("could not record %s of %s; applied in memory only",
                      settlement.status, request.id)  # fmt: skip
            self.apply(request, settlement)
            return True
        if won:
            self.apply_written(request, settlement)
            return True
        return await self._lost(request, settlement)

    async def _lost(self, request: PendingInput, settlement: Settlement) -> bool:
        """The compare-and-set refused this settle: follow the row."""
        store = self._worker.store
        assert store is not None
        record = await store.get_request(request.id)
        if record is not None and record.status is not PENDING:
            self.apply(request, record, tell=False)  # the winner told the observers
            return False
        if record is not None and not self._held_here(request):
            request._flags &= ~CLAIMED  # held nowhere here: its live holder decides it
            return False
        if record is not None:  # our hold lapsed and another worker holds it now
            self._worker.mark(request, held=False)
            return await self._through_holder(request, settlement)
        # No row (the store came after the request): settle here rather than leave the request
        # claimed, unanswerable and its waiters blocked for good.
        log.error("no row for %s; applied %s in memory only", request.id, settlement.status)
        self.apply(request, settlement)
        return True

    async def _through_holder(
        self, request: PendingInput, settlement: Settlement, must_record: bool = False
    ) -> bool:
        """A settle of a request another worker holds (or none here): propose it, apply the
        outcome. True if the proposal won."""
        proposal = self._worker.settlement(
            request.id, settlement.status, settlement.result, settlement.reason,
            settlement.by, settlement.at, proposal=secrets.token_hex(8),
            by_detail=settlement.by_detail,
        )  # fmt: skip
        store = self._worker.store
        assert store is not None
        try:
            won, here = await self.proposals.offer(proposal)
            record = None if won else await store.get_request(request.id)
        except Exception as err:
            if not self._held_here(request):
                raise  # nothing here waits on it: the caller hears the store failed
            if must_record:
                request._flags &= ~CLAIMED
                raise StoreUnavailableError(f"could not record the answer to {request.id}") from err
            log.exception("could not hand %s of %s over; applied in memory only",
                          settlement.status, request.id)  # fmt: skip
            self.apply(request, settlement)
            return True
        if won:
            if here:
                self.apply_written(request, proposal)
            else:
                self.apply(request, proposal, tell=False)
        elif record is not None and record.status is not PENDING:
            self.apply(request, record, tell=False)
        elif self._held_here(request):  # refused, yet no settled row: do not leave it claimed
            log.error("no settled row for %s; applied %s in memory only",
                      request.id, settlement.status)  # fmt: skip
            self.apply(request, settlement)
        return won

    # -- steps 3 and 4: apply, tell ---------------------------------------------------------------

    def apply(
        self, request: PendingInput, source: Settlement | PendingInput, *, tell: bool = True
    ) -> None:
        """Write the outcome on the request, then `settled` (unless it settled already)."""
        if request.status is not PENDING:
            return
        copy_settled(request, source)
        self.settled(request, tell)
        loaded = self._active.get(request.id)
        if loaded is not None and loaded is not request:  # a record held nowhere here, while
            self._tasks.spawn(self.follow(request.id))  # a wait() loaded it: wake that one

    def apply_written(self, request: PendingInput, source: Settlement | PendingInput) -> None:
        """Apply a settle this worker wrote, and tell the observers: the writer tells them,
        also when its own NOTIFY was followed first and applied the row (untold, as another
        worker's), which a busy event loop can do before the write's reply is read."""
        if request.status is PENDING:
            self.apply(request, source)
        elif request._flags & UNTOLD:
            request._flags &= ~UNTOLD
            self._observers.notify(request)

    def settled(self, request: PendingInput, tell: bool = True) -> None:
        """The outcome is on the request: wake its waiters, retain it, tell the observers
        (or, if `tell` is False, mark it UNTOLD: another worker told them)."""
        if request._flags & HELD:
            self._worker.holding -= 1
        request._flags = 0 if tell else UNTOLD
        disarm(request)
        waiters, request._waiters = request._waiters, None
        if isinstance(waiters, list):
            for waiter in waiters:
                waiter._wake()
        elif waiters is not None:
            waiters._wake()
        self._ledger.retain(request)
        if tell:
            self._observers.notify(request)

    def _held_here(self, request: PendingInput) -> bool:
        """Whether the request is in memory here (active, or waited on after a release),
        rather than a record only the store knows, settled in passing."""
        return request._waiters is not None or self._active.get(request.id) is request

    # -- what another process did ----------------------------------------------------------------

    async def follow(self, request_id: str) -> None:
        """See `HumanInputHandler.follow`: wake the proposers here; as the request's holder,
        apply the first proposal waiting (through the claim); else take up the outcome
        another worker recorded (it told the observers)."""
        self.proposals.heard(request_id)
        request = self._active.get(request_id)
        store = self._worker.store
        if request is None or request.status is not PENDING or store is None:
            return
        if request._flags & HELD:
            if request._flags & CLAIMED:
                return  # being settled here: its write refuses every proposal
            proposals = await store.proposals(request_id)
            if proposals:
                first = proposals[0]
                self.settle(request, first.status, result=first.result, reason=first.reason,
                            by=first.by, proposal=first.proposal)  # fmt: skip
            if proposals is not None:
                return
        record = await store.get_request(request_id)
        if record is not None and record.status is not PENDING:
            self.apply(request, record, tell=False)


async def _with_retries(call: Callable[[], Awaitable[bool]], attempts: int = 5) -> bool | None:
    """A settle the database could not take is retried with backoff; None if it never did."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception:
            log.warning("settle attempt %d failed", attempt + 1, exc_info=True)
            await asyncio.sleep(0.05 * 2**attempt)
    return None
