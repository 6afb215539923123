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

from bot.human_input.holding import Holding
from bot.human_input.ledger import FOREIGN, Deadlines, Entry, Ledger
from bot.human_input.ports import HandlerStore
from bot.human_input.settler import Settler
from bot.human_input.tasks import Tasks
from bot.human_input.waiter import Wait
from bot.human_input.worker import Worker
from bot.records import PendingInput, RequestStatus


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
        self.retire: Callable[[Entry], None] = ledger.retire
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
        try:
            found = await self._load(pending_id)
        except asyncio.CancelledError:
            # Cut while it loaded the request: withdrawn as a wait cut once blocked would be.
            entry = self.active.get(pending_id)
            if entry is not None and entry.waiters is None:
                self.withdraw(entry, None)
            raise
        if found is None:
            raise ValueError(f"Unknown human input request: {pending_id}")
        # The entry itself, not its id: a settled one is not in memory with retention 0.
        answer: str = await Wait(self, found, timeout)
        return answer

    def arm(self, entry: Entry, seconds: float) -> None:
        """The request times out `seconds` from now (its timeout message names them)."""
        entry.seconds = seconds
        self._deadlines.arm(entry, seconds)

    def add(
        self, entry: Entry, timeout: float, waiter: Wait, loop: asyncio.AbstractEventLoop
    ) -> None:
        """One more waiter; the request's deadline moves in to `timeout` if that is sooner."""
        if entry.queue is None or entry.deadline > loop.time() + timeout:
            self.arm(entry, timeout)
        waiters = entry.waiters
        if waiters is None:
            entry.waiters = waiter
        elif isinstance(waiters, list):
            waiters.append(waiter)
        else:
            entry.waiters = [waiters, waiter]

    def withdraw(self, entry: Entry, waiter: Wait | None) -> None:
        """A cancelled wait() (None: cut before it blocked): the last waiter to go withdraws
        the request and retires it."""
        waiters = entry.waiters
        if waiters is waiter:
            entry.waiters = None
        elif isinstance(waiters, list):
            if waiter in waiters:
                waiters.remove(waiter)
            if not waiters:
                entry.waiters = None
        if entry.waiters is not None:
            return
        if entry.request.status is RequestStatus.PENDING:
            if self._suspended:
                self._holding.release(entry)
                return
            self._settler.settle(entry, RequestStatus.CANCELLED, reason="Human input withdrawn")
        self._ledger.retire(entry)

    async def _load(self, pending_id: str) -> Entry | PendingInput | None:
        """Bring a request written by another process (or before a restart) into memory, and
        take its hold if no live worker has it."""
        store = self._worker.store
        assert store is not None
        record = await store.get_request(pending_id)
        if record is None:
            return None
        existing = self.active.get(pending_id) or self.settled.get(pending_id)
        if existing is not None:  # loaded meanwhile by another caller
            return existing
        if record.status is not RequestStatus.PENDING:
            self._ledger.retain(record)
            return record
        entry = Entry(record, FOREIGN)  # until this worker is known to hold it
        self.active[pending_id] = entry
        remaining = (record.expires_at or datetime.now(UTC)) - datetime.now(UTC)
        self.arm(entry, max(remaining.total_seconds(), 0.0))
        entry.seconds = record.lifetime_seconds or 0.0
        await self._holding.take(entry)
        # A settle by another worker that committed while we read the row notified before
        # the request was ours to wake: read it once more, behind that.
        self._tasks.spawn(self._settler.follow(pending_id))
        return entry
