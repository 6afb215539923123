"""The settles that return once recorded: answer, decline, cancel, undeliverable, and the
durable deadline's expiry. Unlike resolve() they work for a request this worker does not have
in memory, or that another worker holds: the row (or its holder) decides.

They claim and record as every settle does (bot/human_input/settler.py); a request only the
store knows is settled by a proposal (bot/human_input/proposals.py) and, if it won, told to the
observers from its row.
"""

from __future__ import annotations

from collections.abc import Mapping

from bot.human_input.checks import AnswerChecks
from bot.human_input.ledger import Ledger
from bot.human_input.observers import Observers
from bot.human_input.outcomes import Outcomes
from bot.human_input.proposals import Proposals
from bot.human_input.settler import Settler
from bot.human_input.snapshots import RequestUpdate, timeout_message
from bot.human_input.tasks import Tasks
from bot.human_input.worker import Worker
from bot.records import CLAIMED, PendingInput, RequestStatus, copy_settled


class AwaitedSettles:
    """Settles awaited until recorded; `known` is the request as the caller just read it."""

    def __init__(
        self,
        worker: Worker,
        ledger: Ledger,
        checks: AnswerChecks,
        settler: Settler,
        outcomes: Outcomes,
        proposals: Proposals,
        observers: Observers,
        tasks: Tasks,
    ) -> None:
        self._worker = worker
        self._ledger = ledger
        self._checks = checks
        self._settler = settler
        self._proposals = proposals
        self._outcomes = outcomes
        self._observers = observers
        self._tasks = tasks

    async def settle(
        self,
        pending_id: str,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None = None,
        by_detail: Mapping[str, str] | None = None,
        known: PendingInput | None = None,
    ) -> bool:
        """Claim, validate and record; True once recorded as this settle."""
        store = self._worker.store
        request = self._ledger.active.get(pending_id)
        if request is None and store is not None:
            record = known if known is not None else await store.get_request(pending_id)
            if record is None or record.status is not RequestStatus.PENDING:
                return False
            request = self._ledger.active.get(pending_id)
            if request is None:  # still not in memory here
                if result is not None:
                    result = self._checks.validated(record, result)
                return await self._unheld(record, status, result, reason, by, by_detail)
        if request is None or request.status is not RequestStatus.PENDING:
            return False
        if request._flags & CLAIMED:
            return False
        if result is not None:
            result = self._checks.validated(request, result)
        settlement = self._worker.settlement(
            request.id, status, result, reason, by, by_detail=by_detail
        )
        if self._worker.store is None:
            self._outcomes.apply(request, settlement)
            return True
        request._flags |= CLAIMED
        return await self._settler.record(request, settlement, must_record=by is not None)

    async def _unheld(
        self,
        record: PendingInput,
        status: RequestStatus,
        result: str | None,
        reason: str | None,
        by: str | None,
        by_detail: Mapping[str, str] | None,
    ) -> bool:
        """Settle a request this worker does not have in memory: the row (or its holder) decides."""
        proposal = self._worker.settlement(
            record.id, status, result, reason, by, proposal=self._worker.proposal_id(),
            by_detail=by_detail,
        )  # fmt: skip
        won, here = await self._proposals.offer(proposal)
        request = self._ledger.active.get(record.id)
        if request is not None:  # a wait() loaded it meanwhile: wake it now, not at its deadline
            if won:
                self._proposals.apply_won(request, proposal, here)
            else:
                self._tasks.spawn(self._settler.follow(record.id))
            return won
        if won:
            copy_settled(record, proposal)
            self._ledger.retain(record)  # a wait() loading it meanwhile finds it settled
            if here:
                self._observers.tell(RequestUpdate.of(record))
        return won

    async def expire_record(self, record: PendingInput) -> None:
        """See `HumanInputHandler.expire_record`."""
        reason = timeout_message(record.lifetime_seconds or 0.0, record.tool_name)
        result = self._checks.default_answer(record)
        request = self._ledger.active.get(record.id)
        if request is not None:
            self._settler.settle(request, RequestStatus.TIMED_OUT, result=result, reason=reason)
            return
        store = self._worker.store
        assert store is not None
        settlement = self._worker.settlement(record.id, RequestStatus.TIMED_OUT, result, reason)
        if not await store.settle(settlement):
            return
        request = self._ledger.active.get(record.id)
        if request is not None:  # loaded meanwhile
            self._outcomes.apply_written(request, settlement)
            return
        copy_settled(record, settlement)
        self._ledger.retain(record)
        self._observers.tell(RequestUpdate.of(record))
