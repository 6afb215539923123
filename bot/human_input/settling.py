"""Settling: resolve, reject, release, and the one transition out of pending they race for.

Every request settles once: resolve, reject, timeout, release, close and a cancelled wait race
for one claim, taken on the event loop. Without a store the claim is the settle. With one, the
claim is written as a compare-and-set (bot/human_input/holding.py) and applied once written;
a claimed request takes no other settle meanwhile.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from bot.human_input.base import HandlerState
from bot.human_input.snapshots import AnswerValidator
from bot.records import (
    CLAIMED,
    FOREIGN,
    HELD,
    UNTOLD,
    PendingInput,
    RequestStatus,
    Settlement,
    copy_settled,
)

log = logging.getLogger("bot.human_input")


class Settling(HandlerState):
    def set_answer_validator(self, tool_name: str, validator: AnswerValidator) -> None:
        """Check (and normalise) answers to `tool_name`: the validator returns the answer as
        stored, or raises (AnswerInvalidError) to refuse it. Only tools whose answer model the
        project defines register one; any other tool's answer is taken verbatim."""
        self._validators[tool_name] = validator

    def set_expiry_validator(self, tool_name: str, validator: AnswerValidator) -> None:
        """Check a policy's default answer to `tool_name` at the deadline with `validator`
        rather than the one for people's answers (an approval gate's default may decline,
        which a person does by declining, not by answering)."""
        self._expiry_validators[tool_name] = validator

    def resolve(self, pending_id: str, result: str, *, by: str | None = None) -> bool:
        """Answer a request with any string. True means its waiter gets exactly this answer;
        False that it will not (unknown, already settled, refused by the tool's validator, or
        held by another worker, which decides it: use `answer()` there). Never raises for the
        answer's content."""
        request = self._active.get(pending_id)
        if request is None or not self._may_decide(request):
            return False
        validator = self._validators.get(request.tool_name)
        if validator is not None:
            try:
                result = validator(request.arguments, result)
            except Exception as err:
                log.info("answer to %s refused: %s", pending_id, err)
                return False
        return self._settle(request, RequestStatus.RESOLVED, result=result, by=by)

    def reject(self, pending_id: str, reason: str = "", *, by: str | None = None) -> bool:
        """Refuse a request; its waiter raises HumanInputRejectedError(reason). True means
        that is what the waiter gets."""
        request = self._active.get(pending_id)
        if request is None or not self._may_decide(request):
            return False
        return self._settle(request, RequestStatus.REJECTED, reason=reason, by=by)

    def release(self, pending_id: str) -> bool:
        """Drop a request the caller owns from the active set, withdrawing it first if still
        unanswered (a stray waiter raises rather than hangs). An answer it already has stays
        replayable from the retention. True if one was dropped."""
        request = self._active.pop(pending_id, None)
        if request is None:
            return False
        if request.status is RequestStatus.PENDING:
            self._settle(request, RequestStatus.CANCELLED, reason="Human input released")
        return True

    def _may_decide(self, request: PendingInput) -> bool:
        """Whether a synchronous settle here is the request's outcome: it is pending and not
        being settled, and no other worker decides it (bot/human_input/holding.py)."""
        flags = request._flags
        if request.status is not RequestStatus.PENDING or flags & (CLAIMED | FOREIGN):
            return False
        if flags & HELD and asyncio.get_running_loop().time() >= self._alive_until:
            log.warning("cannot vouch for the hold of %s (no recent heartbeat): use answer()",
                        request.id)  # fmt: skip
            return False
        return True

    def _validated(self, request: PendingInput, result: str) -> str:
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
        proposal: str | None = None,
    ) -> bool:
        """The single transition out of pending: claim it; with a store, the row is written
        (or its holder asked) before the outcome is applied. True if this settle claimed it."""
        if request.status is not RequestStatus.PENDING or request._flags & CLAIMED:
            return False
        if self.store is None:
            # In memory the claim is the settle: written on the request directly (a Settlement
            # built only to be copied field by field cost more than the rest of a resolve()).
            request.status = status
            request.result = result
            request.reason = reason
            request.settled_by = by
            request.settled_at = datetime.now(UTC)
            self._settled_now(request)
            return True
        settlement = self._settlement(request.id, status, result, reason, by, proposal=proposal)
        request._flags |= CLAIMED
        self._spawn(self._record_settle(request, settlement))
        return True

    def _apply(
        self, request: PendingInput, source: Settlement | PendingInput, *, tell: bool = True
    ) -> None:
        """Write the outcome on the request, wake its waiters, retain it and (unless `tell` is
        False: another worker told them) tell the observers."""
        if request.status is not RequestStatus.PENDING:
            return
        copy_settled(request, source)
        self._settled_now(request, tell)

    def _apply_written(self, request: PendingInput, source: Settlement | PendingInput) -> None:
        """Apply a settle this worker wrote, and tell the observers: the writer tells them,
        also when its own NOTIFY was followed first and applied the row (untold, as another
        worker's), which a busy event loop can do before the write's reply is read."""
        if request.status is RequestStatus.PENDING:
            self._apply(request, source)
        elif request._flags & UNTOLD:
            request._flags &= ~UNTOLD
            self._notify_observers(request)

    def _settled_now(self, request: PendingInput, tell: bool = True) -> None:
        """The outcome is on the request: wake its waiters, retain it, tell the observers
        (or, if `tell` is False, mark it UNTOLD: another worker told them)."""
        if request._flags & HELD:
            self._holding -= 1
        request._flags = 0 if tell else UNTOLD
        self._deadlines.disarm(request)
        waiters, request._waiters = request._waiters, None
        if isinstance(waiters, list):
            for waiter in waiters:
                waiter._wake()
        elif waiters is not None:
            waiters._wake()
        self._retain(request)
        if tell:
            self._notify_observers(request)

    def _retain(self, request: PendingInput) -> None:
        if self.retention <= 0:
            return
        self._settled[request.id] = request
        self._settled.move_to_end(request.id)
        while len(self._settled) > self.retention:
            self._settled.popitem(last=False)
