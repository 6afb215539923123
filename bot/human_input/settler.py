"""The one transition out of pending, which every settle races for.

Resolve, reject, release, a timeout, close and a cancelled wait all settle through `settle`,
in at most four steps, each one call into one part:

1. **Claim** (`Settler.settle`): the request is pending and unclaimed, or this settle loses.
   Taken on the event loop, so of racing settles exactly one gets it. In memory, the claim
   writes the outcome on the request and goes to step 3.
2. **Record** (`Settler.record`): the store's compare-and-set, with its audit row in the same
   transaction; for a request another worker holds, a proposal to that holder instead
   (`Proposals.through_holder`; the rules are holding.py's). A claimed request takes no
   other settle meanwhile.
3. **Apply** (`Outcomes.settled`): the outcome the row took is on the request; its deadline
   disarmed, its waiters woken, its outcome retained.
4. **Tell** (`Observers.notify`): the observers are queued the request's new state, unless
   the worker that wrote it told them.

The awaited settles (`answer()`, `decline()`, ...: bot/human_input/awaited.py) claim and record
the same way, and return once the four steps are done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime

from bot.human_input.carried import within
from bot.human_input.checks import AnswerChecks
from bot.human_input.ledger import Ledger
from bot.human_input.outcomes import Outcomes
from bot.human_input.proposals import Proposals
from bot.human_input.snapshots import timeout_message
from bot.human_input.tasks import Tasks
from bot.human_input.worker import Worker
from bot.records import (
    CLAIMED,
    FOREIGN,
    HELD,
    PendingInput,
    RequestStatus,
    Settlement,
    StoreUnavailableError,
)

log = logging.getLogger("bot.human_input")

PENDING = RequestStatus.PENDING


class Settler:
    """Claims a request's settle (step 1) and records it (step 2); `Outcomes` does the rest."""

    def __init__(
        self,
        worker: Worker,
        ledger: Ledger,
        checks: AnswerChecks,
        outcomes: Outcomes,
        proposals: Proposals,
        tasks: Tasks,
    ) -> None:
        self._worker = worker
        self._active = ledger.active
        self._validators = checks.validators
        self._checks = checks
        self._outcomes = outcomes
        self._proposals = proposals
        self._tasks = tasks

    # -- the synchronous settles: resolve, reject, release ------------------------------------

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
        if request.status is RequestStatus.PENDING:
            self.settle(request, RequestStatus.CANCELLED, reason="Human input released")
        return True

    def may_decide(self, request: PendingInput) -> bool:
        """Whether a synchronous settle here is the request's outcome: it is pending and not
        being settled, and no other worker decides it (bot/human_input/holding.py)."""
        flags = request._flags
        if request.status is not RequestStatus.PENDING or flags & (CLAIMED | FOREIGN):
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

    # -- steps 1 and 2 --------------------------------------------------------------------------

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
        """Step 1, the claim; with a store, step 2 runs as a task. True if this settle
        claimed the request (its outcome is the row's, written or handed over)."""
        if request.status is not RequestStatus.PENDING or request._flags & CLAIMED:
            return False
        if self._worker.store is None:
            # In memory the claim is the settle: written on the request directly (a Settlement
            # built only to be copied field by field cost more than the rest of a resolve()).
            request.status = status
            request.result = result
            request.reason = reason
            request.settled_by = by
            request.settled_at = datetime.now(UTC)
            self._outcomes.settled(request)
            return True
        settlement = self._worker.settlement(
            request.id, status, result, reason, by, proposal=proposal
        )
        request._flags |= CLAIMED
        self._tasks.spawn(self.record(request, settlement))
        return True

    async def record(
        self, request: PendingInput, settlement: Settlement, *, must_record: bool = False
    ) -> bool:
        """Step 2: write a claimed settle, then apply what the row says. True if it won.

        A settle the database never took is applied in memory only (a timeout, a withdrawal:
        the waiter must wake), except a person's answer given through `answer()`/`decline()`
        (`must_record`): that one is not taken, the request stays open, and the caller gets
        StoreUnavailableError, so nobody is told "answered" when nothing was recorded.
        """
        store = self._worker.store
        assert store is not None
        if request._flags & FOREIGN:
            return await self._proposals.through_holder(request, settlement)
        won = await _with_retries(lambda: store.settle(settlement))
        if won is None and must_record:
            request._flags &= ~CLAIMED
            raise StoreUnavailableError(f"could not record the answer to {request.id}")
        if won is None:
            log.error("could not record %s of %s; applied in memory only",
                      settlement.status, request.id)  # fmt: skip
            self._outcomes.apply(request, settlement)
            return True
        if won:
            self._outcomes.apply_written(request, settlement)
            return True
        return await self._lost(request, settlement)

    async def _lost(self, request: PendingInput, settlement: Settlement) -> bool:
        """The compare-and-set refused this settle: follow the row."""
        store = self._worker.store
        assert store is not None
        record = await store.get_request(request.id)
        if record is not None and record.status is not RequestStatus.PENDING:
            self._outcomes.apply(request, record, tell=False)  # the winner told the observers
            return False
        if record is not None:  # our hold lapsed and another worker holds it now
            self._worker.mark(request, held=False)
            return await self._proposals.through_holder(request, settlement)
        # No row (the store came after the request): settle here rather than leave the request
        # claimed, unanswerable and its waiters blocked for good.
        log.error("no row for %s; applied %s in memory only", request.id, settlement.status)
        self._outcomes.apply(request, settlement)
        return True

    async def follow(self, request_id: str) -> None:
        """See `HumanInputHandler.follow`: wake the proposers here; as the request's holder,
        apply the first proposal waiting (through the claim); else take up the outcome
        another worker recorded (it told the observers)."""
        self._proposals.heard(request_id)
        request = self._active.get(request_id)
        store = self._worker.store
        if request is None or request.status is not RequestStatus.PENDING or store is None:
            return
        if request._flags & HELD:
            if request._flags & CLAIMED:
                return  # being settled here: its write refuses every proposal
            proposals = await store.proposals(request_id)
            if proposals:  # applied in the trace it was made in (its record task's too)
                first = proposals[0]
                with within(self._worker.carrier, first.proposal):
                    self.settle(request, first.status, result=first.result, reason=first.reason,
                                by=first.by, proposal=first.proposal)  # fmt: skip
            if proposals is not None:
                return
        record = await store.get_request(request_id)
        if record is not None and record.status is not RequestStatus.PENDING:
            self._outcomes.apply(request, record, tell=False)


async def _with_retries(call: Callable[[], Awaitable[bool]], attempts: int = 5) -> bool | None:
    """A settle the database could not take is retried with backoff; None if it never did."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception:
            log.warning("settle attempt %d failed", attempt + 1, exc_info=True)
            await asyncio.sleep(0.05 * 2**attempt)
    return None
