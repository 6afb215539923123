"""wait(): block until a request settles, replay an outcome already recorded, own the cleanup.

RoomKit's rules: wait() retires the request once it has its outcome (the answer, the rejection,
the timeout); until then the request stays in the active set, however long ago it settled and
whatever `retention` is, so an answer recorded before anyone waits is never lost. Once retired,
the retention (filled when the outcome arrived) is what a later wait() replays.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from datetime import UTC, datetime
from typing import Any

from bot.human_input.base import DEFAULT_TIMEOUT_SECONDS, HandlerState
from bot.human_input.snapshots import timeout_message
from bot.human_input.waiter import Wait
from bot.records import FOREIGN, PendingInput, RequestStatus

log = logging.getLogger("bot.human_input")


class Waiting(HandlerState):
    def wait(
        self, pending_id: str, *, timeout: float = DEFAULT_TIMEOUT_SECONDS
    ) -> Coroutine[Any, Any, str]:
        """Block until answered; raise on rejection, timeout or withdrawal. Replays outcomes.

        A coroutine, as an `async def` gives, written out by hand (bot/human_input/waiter.py):
        blocked, it is one small object rather than a frame, a future and its iterator."""
        return Wait(self, pending_id, timeout)

    async def _wait_stored(self, pending_id: str, timeout: float) -> str:
        """wait() for a request not in memory here: read from the store, then waited for."""
        request = await self._load(pending_id)
        if request is None:
            raise ValueError(f"Unknown human input request: {pending_id}")
        # The request itself, not its id: a settled one is not in memory with retention 0.
        answer: str = await Wait(self, request, timeout)
        return answer

    def _retire(self, request: PendingInput) -> None:
        """wait() is done with the request: it leaves the active set (its outcome stays in the
        retention). A detached request is its creator's to release()."""
        if not request.detached and self._active.get(request.id) is request:
            del self._active[request.id]

    def _add_waiter(
        self, request: PendingInput, timeout: float, waiter: Wait, loop: asyncio.AbstractEventLoop
    ) -> None:
        """One more waiter; the request's deadline moves in to `timeout` if that is sooner."""
        if request._timer is None or request._deadline > loop.time() + timeout:
            self._arm_timer(request, timeout)
        waiters = request._waiters
        if waiters is None:
            request._waiters = waiter
        elif isinstance(waiters, list):
            waiters.append(waiter)
        else:
            request._waiters = [waiters, waiter]

    def _withdraw_waiter(self, request: PendingInput, waiter: Wait) -> None:
        """A cancelled wait(): the last waiter to go withdraws the request and retires it."""
        waiters = request._waiters
        if waiters is waiter:
            request._waiters = None
        elif isinstance(waiters, list):
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                request._waiters = None
        if request._waiters is not None:
            return
        if request.status is RequestStatus.PENDING:
            if self.suspended:
                self._release_memory(request)
                return
            self._settle(request, RequestStatus.CANCELLED, reason="Human input withdrawn")
        self._retire(request)

    def _arm_timer(self, request: PendingInput, seconds: float) -> None:
        request._timer_seconds = seconds
        self._deadlines.arm(request, seconds)

    def _expire(self, request: PendingInput) -> None:
        reason = timeout_message(request._timer_seconds, request.tool_name)
        result = self._default_answer(request)
        self._settle(request, RequestStatus.TIMED_OUT, result=result, reason=reason)

    def _default_answer(self, request: PendingInput) -> str | None:
        """The policy's answer at the deadline (`expiry_answer`), checked as a person's would
        be; None when there is none, or when it does not fit the tool's answer (then the
        request expires unanswered: a default the tool cannot read must not pass as one)."""
        if self.expiry_answer is None:
            return None
        answer = self.expiry_answer(request.tool_name, request.arguments)
        if answer is None:
            return None
        validator = self._expiry_validators.get(request.tool_name)
        try:
            if validator is not None:
                return validator(request.arguments, answer)
            return self._validated(request, answer)
        except Exception as err:
            log.warning("the policy's default answer to %s does not fit %s, so it expired "
                        "unanswered: %s", request.id, request.tool_name, err)  # fmt: skip
            return None

    async def _load(self, pending_id: str) -> PendingInput | None:
        """Bring a request written by another process (or before a restart) into memory, and
        take its hold if no live worker has it (bot/human_input/holding.py)."""
        assert self.store is not None
        record = await self.store.get_request(pending_id)
        if record is None:
            return None
        existing = self._active.get(pending_id) or self._settled.get(pending_id)
        if existing is not None:  # loaded meanwhile by another caller
            return existing
        if record.status is not RequestStatus.PENDING:
            self._retain(record)
            return record
        record._flags = FOREIGN  # until this worker is known to hold it
        self._active[pending_id] = record
        remaining = (record.expires_at or datetime.now(UTC)) - datetime.now(UTC)
        self._arm_timer(record, max(remaining.total_seconds(), 0.0))
        record._timer_seconds = record.lifetime_seconds or 0.0
        await self._take(record)
        # A settle by another worker that committed while we read the row notified before
        # the request was ours to wake: read it once more, behind that.
        self._spawn(self.follow(pending_id))
        return record
