"""wait(): block until a request settles, replay an outcome already recorded, own the cleanup.

RoomKit's rules (bot/human_input/ledger.py): wait() retires the request once it has its outcome
(the answer, the rejection, the timeout); until then the request stays active however long ago
it settled, whatever `retention` is. A blocked wait() is a `Wait` (waiter.py) on the request;
its settle wakes it (settler.py). A request only the store knows is loaded first, and its hold
taken if no live worker has it (holding.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime

from bot.human_input.deadlines import Deadlines
from bot.human_input.holding import Holding
from bot.human_input.ledger import Ledger
from bot.human_input.ports import HandlerStore
from bot.human_input.settler import Settler
from bot.human_input.tasks import Tasks
from bot.human_input.waiter import Wait
from bot.human_input.worker import Worker
from bot.records import FOREIGN, PendingInput, RequestStatus


class Waiters:
    """The wait() calls on requests, and their deadlines (a waiter's timeout may bring one in)."""

    def __init__(
        self,
        worker: Worker,
        ledger: Ledger,
        deadlines: Deadlines,
        settler: Settler,
        holding: Holding,
        tasks: Tasks,
    ) -> None:
        self._worker = worker
        self._ledger = ledger
        # What a wait() reads and calls of the ledger, without a hop through it.
        self.active = ledger.active
        self.settled = ledger.settled
        self.retire: Callable[[PendingInput], None] = ledger.retire
        self._deadlines = deadlines
        self._settler = settler
        self._holding = holding
        self._tasks = tasks
        self._suspended = False

    def suspend(self) -> None:
        """The worker shuts down: a wait cut from now on leaves its request pending, for the
        worker that resumes the run, instead of withdrawing it."""
        self._suspended = True

    @property
    def store(self) -> HandlerStore | None:
        return self._worker.store

    async def wait_stored(self, pending_id: str, timeout: float) -> str:
        """wait() for a request not in memory here: read from the store, then waited for."""
        request = await self._load(pending_id)
        if request is None:
            raise ValueError(f"Unknown human input request: {pending_id}")
        # The request itself, not its id: a settled one is not in memory with retention 0.
        answer: str = await Wait(self, request, timeout)
        return answer

    def arm(self, request: PendingInput, seconds: float) -> None:
        """The request times out `seconds` from now (its timeout message names them)."""
        request._timer_seconds = seconds
        self._deadlines.arm(request, seconds)

    def add(
        self, request: PendingInput, timeout: float, waiter: Wait, loop: asyncio.AbstractEventLoop
    ) -> None:
        """One more waiter; the request's deadline moves in to `timeout` if that is sooner."""
        if request._timer is None or request._deadline > loop.time() + timeout:
            self.arm(request, timeout)
        waiters = request._waiters
        if waiters is None:
            request._waiters = waiter
        elif isinstance(waiters, list):
            waiters.append(waiter)
        else:
            request._waiters = [waiters, waiter]

    def withdraw(self, request: PendingInput, waiter: Wait) -> None:
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
            if self._suspended:
                self._holding.release(request)
                return
            self._settler.settle(request, RequestStatus.CANCELLED, reason="Human input withdrawn")
        self._ledger.retire(request)

    async def _load(self, pending_id: str) -> PendingInput | None:
        """Bring a request written by another process (or before a restart) into memory, and
        take its hold if no live worker has it."""
        store = self._worker.store
        assert store is not None
        record = await store.get_request(pending_id)
        if record is None:
            return None
        existing = self._ledger.find(pending_id)
        if existing is not None:  # loaded meanwhile by another caller
            return existing
        if record.status is not RequestStatus.PENDING:
            self._ledger.retain(record)
            return record
        record._flags = FOREIGN  # until this worker is known to hold it
        self.active[pending_id] = record
        remaining = (record.expires_at or datetime.now(UTC)) - datetime.now(UTC)
        self.arm(record, max(remaining.total_seconds(), 0.0))
        record._timer_seconds = record.lifetime_seconds or 0.0
        await self._holding.take(record)
        # A settle by another worker that committed while we read the row notified before
        # the request was ours to wake: read it once more, behind that.
        self._tasks.spawn(self._settler.follow(pending_id))
        return record
