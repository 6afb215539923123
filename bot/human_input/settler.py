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
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime

from bot.human_input.carried import within
from bot.human_input.holding import Proposals, Worker
from bot.human_input.ledger import CLAIMED, FOREIGN, HELD, UNTOLD, Entry, Ledger, disarm
from bot.human_input.observers import Observers, Tasks
from bot.human_input.rules import AnswerChecks
from bot.human_input.snapshots import timeout_message
from bot.records import (
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
        entry = self._active.get(pending_id)
        if entry is None:
            return False
        request = entry.request
        # A pending request without flags (in memory, unclaimed) is decided here: a call less.
        if (entry.flags or request.status is not PENDING) and not self.may_decide(entry):
            return False
        validator = self._validators.get(request.tool_name)
        if validator is not None:
            try:
                result = validator(request.arguments, result)
            except Exception as err:
                log.info("answer to %s refused: %s", pending_id, err)
                return False
        return self.settle(entry, RequestStatus.RESOLVED, result=result, by=by)

    def reject(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """See `HumanInputHandler.reject`."""
        entry = self._active.get(pending_id)
        if entry is None or not self.may_decide(entry):
            return False
        return self.settle(entry, RequestStatus.REJECTED, reason=reason, by=by)

    def release(self, pending_id: str) -> bool:
        """See `HumanInputHandler.release`."""
        entry = self._active.pop(pending_id, None)
        if entry is None:
            return False
        if entry.request.status is PENDING:
            self.settle(entry, RequestStatus.CANCELLED, reason="Human input released")
        return True

    def may_decide(self, entry: Entry) -> bool:
        """Whether a synchronous settle here is the request's outcome: it is pending and not
        being settled, and no other worker decides it (bot/human_input/holding.py)."""
        flags = entry.flags
        if entry.request.status is not PENDING or flags & (CLAIMED | FOREIGN):
            return False
        if flags & HELD and not self._worker.vouches():
            log.warning("cannot vouch for the hold of %s (no recent heartbeat): use answer()",
                        entry.request.id)  # fmt: skip
            return False
        return True

    def expire(self, entry: Entry) -> None:
        """The request's deadline passed here (its timer): time it out, with the policy's
        default answer if it has one."""
        reason = timeout_message(entry.seconds, entry.request.tool_name)
        result = self._checks.default_answer(entry.request)
        self.settle(entry, RequestStatus.TIMED_OUT, result=result, reason=reason)

    async def expire_record(self, record: PendingInput) -> None:
        """See `HumanInputHandler.expire_record`."""
        reason = timeout_message(record.lifetime_seconds or 0.0, record.tool_name)
        result = self._checks.default_answer(record)
        # Held nowhere here, its row decides (a live holder's request is left to its timer).
        entry = self._active.get(record.id) or Entry(record)
        claimed = self._claim(entry, RequestStatus.TIMED_OUT, result, reason)
        if isinstance(claimed, Settlement):
            await self.record(entry, claimed)

    # -- step 1: the claim ------------------------------------------------------------------------

    def settle(
        self,
        entry: Entry,
        status: RequestStatus,
        *,
        result: str | None = None,
        reason: str | None = None,
        by: str | None = None,
        proposal: str | None = None,
    ) -> bool:
        """Claim; with a store, step 2 runs as a task. True if this settle claimed the
        request (its outcome is the row's, written or handed over)."""
        claimed = self._claim(entry, status, result, reason, by, proposal=proposal)
        if isinstance(claimed, Settlement):
            self._tasks.spawn(self.record(entry, claimed))
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
        entry = self._active.get(pending_id)
        store = self._worker.store
        if entry is None and store is not None:
            record = known if known is not None else await store.get_request(pending_id)
            entry = self._active.get(pending_id)  # a wait() may have loaded it meanwhile
            if entry is None and record is not None and record.status is PENDING:
                entry = Entry(record, FOREIGN)  # held nowhere here: a proposal, the row decides
        if entry is None or entry.request.status is not PENDING or entry.flags & CLAIMED:
            return False
        if result is not None:
            result = self._checks.validated(entry.request, result)
        claimed = self._claim(entry, status, result, reason, by, by_detail)
        if isinstance(claimed, Settlement):
            return await self.record(entry, claimed, must_record=by is not None)
        return claimed

    def _claim(
        self,
        entry: Entry,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None = None,
        by_detail: Mapping[str, str] | None = None,
        proposal: str | None = None,
    ) -> Settlement | bool:
        """False if another settle came first; True once settled in memory (no store: the
        claim is the settle); else the claimed settlement, for step 2 to record."""
        request = entry.request
        if request.status is not PENDING or entry.flags & CLAIMED:
            return False
        if self._worker.store is None:
            # In memory the claim is the settle: written on the request directly (a Settlement
            # built only to be copied field by field cost more than the rest of a resolve()).
            request.status = status
            request.result = result
            request.reason = reason
            request.settled_by = by
            request.settled_at = datetime.now(UTC)
            self.settled(entry)
            return True
        entry.flags |= CLAIMED
        return self._worker.settlement(
            request.id, status, result, reason, by, proposal=proposal, by_detail=by_detail
        )

    # -- step 2: the record -----------------------------------------------------------------------

    async def record(
        self, entry: Entry, settlement: Settlement, *, must_record: bool = False
    ) -> bool:
        """Write a claimed settle, then apply what the row says. True if it won.

        A settle the database never took is applied in memory only (a timeout, a withdrawal:
        the waiter must wake), except a person's answer (`must_record`): that one is not
        taken, the request stays open, and the caller gets StoreUnavailableError, so nobody is
        told "answered" when nothing was recorded.
        """
        store = self._worker.store
        assert store is not None
        if entry.flags & FOREIGN:
            return await self._through_holder(entry, settlement, must_record)
        won = await _with_retries(lambda: store.settle(settlement))
        if won is None and must_record:
            entry.flags &= ~CLAIMED
            raise StoreUnavailableError(f"could not record the answer to {settlement.request_id}")
        if won is None:
            log.error("could not record %s of %s; applied in memory only",
                      settlement.status, settlement.request_id)  # fmt: skip
            self.apply(entry, settlement)
            return True
        if won:
            self.apply_written(entry, settlement)
            return True
        return await self._lost(entry, settlement)

    async def _lost(self, entry: Entry, settlement: Settlement) -> bool:
        """The compare-and-set refused this settle: follow the row."""
        store = self._worker.store
        assert store is not None
        record = await store.get_request(settlement.request_id)
        if record is not None and record.status is not PENDING:
            self.apply(entry, record, tell=False)  # the winner told the observers
            return False
        if record is not None and not self._held_here(entry):
            entry.flags &= ~CLAIMED  # held nowhere here: its live holder decides it
            return False
        if record is not None:  # our hold lapsed and another worker holds it now
            self._worker.mark(entry, held=False)
            return await self._through_holder(entry, settlement)
        # No row (the store came after the request): settle here rather than leave the request
        # claimed, unanswerable and its waiters blocked for good.
        log.error("no row for %s; applied %s in memory only",
                  settlement.request_id, settlement.status)  # fmt: skip
        self.apply(entry, settlement)
        return True

    async def _through_holder(
        self, entry: Entry, settlement: Settlement, must_record: bool = False
    ) -> bool:
        """A settle of a request another worker holds (or none here): propose it, apply the
        outcome. True if the proposal won."""
        request_id = settlement.request_id
        proposal = self._worker.settlement(
            request_id, settlement.status, settlement.result, settlement.reason,
            settlement.by, settlement.at, proposal=self._worker.proposal_id(),
            by_detail=settlement.by_detail,
        )  # fmt: skip
        store = self._worker.store
        assert store is not None
        try:
            won, here = await self.proposals.offer(proposal)
            record = None if won else await store.get_request(request_id)
        except Exception as err:
            if not self._held_here(entry):
                raise  # nothing here waits on it: the caller hears the store failed
            if must_record:
                entry.flags &= ~CLAIMED
                raise StoreUnavailableError(f"could not record the answer to {request_id}") from err
            log.exception("could not hand %s of %s over; applied in memory only",
                          settlement.status, request_id)  # fmt: skip
            self.apply(entry, settlement)
            return True
        if won:
            if here:
                self.apply_written(entry, proposal)
            else:
                self.apply(entry, proposal, tell=False)
        elif record is not None and record.status is not PENDING:
            self.apply(entry, record, tell=False)
        elif self._held_here(entry):  # refused, yet no settled row: do not leave it claimed
            log.error("no settled row for %s; applied %s in memory only",
                      request_id, settlement.status)  # fmt: skip
            self.apply(entry, settlement)
        return won

    # -- steps 3 and 4: apply, tell ---------------------------------------------------------------

    def apply(self, entry: Entry, source: Settlement | PendingInput, *, tell: bool = True) -> None:
        """Write the outcome on the request, then `settled` (unless it settled already)."""
        request = entry.request
        if request.status is not PENDING:
            return
        copy_settled(request, source)
        self.settled(entry, tell)
        loaded = self._active.get(request.id)
        if loaded is not None and loaded is not entry:  # a record held nowhere here, while
            self._tasks.spawn(self.follow(request.id))  # a wait() loaded it: wake that one

    def apply_written(self, entry: Entry, source: Settlement | PendingInput) -> None:
        """Apply a settle this worker wrote, and tell the observers: the writer tells them,
        also when its own NOTIFY was followed first and applied the row (untold, as another
        worker's), which a busy event loop can do before the write's reply is read."""
        if entry.request.status is PENDING:
            self.apply(entry, source)
        elif entry.flags & UNTOLD:
            entry.flags &= ~UNTOLD
            self._observers.notify(entry.request)

    def settled(self, entry: Entry, tell: bool = True) -> None:
        """The outcome is on the request: wake its waiters, retain it, tell the observers
        (or, if `tell` is False, mark it UNTOLD: another worker told them)."""
        if entry.flags & HELD:
            self._worker.holding -= 1
        entry.flags = 0 if tell else UNTOLD
        disarm(entry)
        waiters, entry.waiters = entry.waiters, None
        if isinstance(waiters, list):
            for waiter in waiters:
                waiter.wake()
        elif waiters is not None:
            waiters.wake()
        self._ledger.retain(entry.request)
        if tell:
            self._observers.notify(entry.request)

    def _held_here(self, entry: Entry) -> bool:
        """Whether the request is in memory here (active, or waited on after a release),
        rather than a record only the store knows, settled in passing."""
        return entry.waiters is not None or self._active.get(entry.request.id) is entry

    # -- what another process did ----------------------------------------------------------------

    async def follow(self, request_id: str) -> None:
        """See `HumanInputHandler.follow`: wake the proposers here; as the request's holder,
        apply the first proposal waiting (through the claim); else take up the outcome
        another worker recorded (it told the observers)."""
        self.proposals.heard(request_id)
        entry = self._active.get(request_id)
        store = self._worker.store
        if entry is None or entry.request.status is not PENDING or store is None:
            return
        if entry.flags & HELD:
            if entry.flags & CLAIMED:
                return  # being settled here: its write refuses every proposal
            proposals = await store.proposals(request_id)
            if proposals:
                first = proposals[0]  # applied in the trace it was made in (carried.py)
                with within(self._worker.carrier, first.proposal):
                    self.settle(entry, first.status, result=first.result, reason=first.reason,
                                by=first.by, proposal=first.proposal)  # fmt: skip
            if proposals is not None:
                return
        record = await store.get_request(request_id)
        if record is not None and record.status is not PENDING:
            self.apply(entry, record, tell=False)


async def _with_retries(call: Callable[[], Awaitable[bool]], attempts: int = 5) -> bool | None:
    """A settle the database could not take is retried with backoff; None if it never did."""
    for attempt in range(attempts):
        try:
            return await call()
        except Exception:
            log.warning("settle attempt %d failed", attempt + 1, exc_info=True)
            await asyncio.sleep(0.05 * 2**attempt)
    return None
