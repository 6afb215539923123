"""wait(): `Wait`, what `HumanInputHandler.wait()` returns, a coroutine written out by hand, and
`Waiters`, the wait() calls on requests.

A blocked `async def wait()` would be a coroutine frame (locals and stack, ≈ 250 B) suspended on
an `asyncio.Future` (≈ 145 B) through the future's iterator (40 B). `Wait` is all three in one
slotted object (≈ 110 B): it is the coroutine the caller awaits or makes a task of, and while
it blocks it is the future-like object its task waits on (the protocol asyncio's Task speaks:
`_asyncio_future_blocking`, `_loop`, `add_done_callback`, `cancel`, `result`). The request's
settle wakes it (`wake`); a cancelled task cancels it, and the cancellation thrown back in
withdraws it from the request, as the `except CancelledError` of the async def did.

It behaves as the async def did: nothing runs until it is first awaited or stepped, it returns
the answer or raises (ValueError, TimeoutError, HumanInputRejectedError, RuntimeError), and it
can be awaited once. A request only the store knows is loaded by an ordinary coroutine, which
this one runs in its place (`_inner`).

Why not a plain `async def` on a future: bench/human_input_bench.py measures that alternative
beside this one in the same run, 376 B a blocked wait() against 112 B, a quarter of what a
pending request costs in all (docs/figures.md); so this stays.

`Waiters`: block until a request settles, replay an outcome already recorded, own the cleanup.
RoomKit's rules (bot/human_input/ledger.py): wait() retires the request once it has its outcome
(the answer, the rejection, the timeout); until then the request stays active however long ago
it settled, whatever `retention` is. A blocked wait() is a `Wait` on the request;
its settle wakes it (settler.py). A request only the store knows is loaded first, and its hold
taken if no live worker has it (holding.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Generator
from contextvars import Context
from datetime import UTC, datetime
from types import TracebackType
from typing import Any

from bot.human_input.holding import Holding
from bot.human_input.ledger import FOREIGN, Deadlines, Entry, Ledger
from bot.human_input.observers import Tasks
from bot.human_input.ports import HandlerStore
from bot.human_input.settler import Settler
from bot.human_input.snapshots import outcome
from bot.records import PendingInput, RequestStatus

# Its states: not yet stepped; blocked on its request; woken by the settle; its task was
# cancelled; running the store's coroutine in its place; finished.
NEW, BLOCKED, WOKEN, CANCELLED, DELEGATING, DONE = range(6)


class Wait(Generator[Any, None, str], Coroutine[Any, Any, str]):
    """One call of wait(): the coroutine, and the future its task waits on while it blocks."""

    __slots__ = (
        "_asyncio_future_blocking",
        "_callback",
        "_cancel_message",
        "_context",
        "_entry",
        "_inner",
        "_loop",
        "_state",
        "_timeout",
        "_waiters",
    )

    def __init__(self, waiters: Waiters, key: str | Entry | PendingInput, timeout: float) -> None:
        """`key`: the request's id, or its entry (or its settled record) once read from the
        store."""
        self._waiters = waiters
        # The key until it starts; the store's coroutine while it runs that.
        self._inner: str | Entry | PendingInput | Coroutine[Any, Any, str] | None = key
        self._timeout = timeout
        self._state = NEW
        # None until it blocks: asyncio.isfuture() must not take a wait() for a future, or
        # ensure_future() and gather() would await it instead of running it.
        self._asyncio_future_blocking: bool | None = None
        self._entry: Entry  # while it blocks: a finished one keeps nothing of it
        self._loop: asyncio.AbstractEventLoop
        self._callback: Callable[[Wait], object] | None
        self._context: Context | None
        self._cancel_message: Any

    # -- the coroutine -----------------------------------------------------------------------

    def __await__(self) -> Wait:
        return self

    def __next__(self) -> Any:
        state = self._state
        if state == WOKEN:
            entry = self._entry
            del self._entry
            self._state = DONE
            self._waiters.retire(entry)
            raise StopIteration(outcome(entry.request))
        if state == NEW:
            return self._start()
        if state == DELEGATING:
            return self._delegate(None, None)
        if state == BLOCKED:  # awaited a second time (or stepped without a settle)
            raise RuntimeError("coroutine is being awaited already")
        if state == CANCELLED:
            raise self._cancelled_error()
        raise RuntimeError("cannot reuse already awaited coroutine")

    def send(self, value: Any) -> Any:
        if value is not None and self._state == NEW:
            raise TypeError("can't send non-None value to a just-started coroutine")
        if self._state == DELEGATING:
            return self._delegate(value, None)
        return self.__next__()

    def throw(
        self,
        typ: type[BaseException] | BaseException,
        val: object = None,
        tb: TracebackType | None = None,
        /,
    ) -> Any:
        if isinstance(typ, BaseException):
            error = typ
        else:
            error = val if isinstance(val, BaseException) else typ() if val is None else typ(val)
        if tb is not None:
            error = error.with_traceback(tb)
        state = self._state
        if state == DELEGATING:
            return self._delegate(None, error)
        self._state = DONE
        if state in (BLOCKED, WOKEN, CANCELLED):
            entry = self._entry
            del self._entry
            if isinstance(error, asyncio.CancelledError):
                # The waiting task was cancelled: this waiter goes (the last one withdraws it).
                self._waiters.withdraw(entry, self)
        raise error

    def close(self) -> None:
        if self._state == DELEGATING:
            inner = self._inner
            assert isinstance(inner, Coroutine)
            inner.close()
        self._state = DONE

    def __repr__(self) -> str:
        return f"<HumanInputHandler.wait() state={self._state}>"

    def _start(self) -> Any:
        waiters = self._waiters
        key, self._inner = self._inner, None
        found = waiters.active.get(key) if type(key) is str else key
        if type(found) is not Entry:  # retained, only the store's, or unknown: not blocking
            return self._start_without_entry(key, found)
        request = found.request
        if request.status is not RequestStatus.PENDING:
            self._state = DONE
            waiters.retire(found)
            raise StopIteration(outcome(request))
        loop = asyncio.get_running_loop()
        waiters.add(found, self._timeout, self, loop)
        self._entry = found
        self._loop = loop
        self._callback = None
        self._context = None
        self._state = BLOCKED
        self._asyncio_future_blocking = True
        return self  # to the task: it waits on this until `wake`

    def _start_without_entry(self, key: object, found: object) -> Any:
        """A request not active here: its retained outcome, else the store's request, else
        ValueError."""
        waiters = self._waiters
        if type(key) is str:
            found = waiters.settled.get(key)
            if found is None and waiters.store is not None:
                # Only the store may know it: reading it is awaited, so an ordinary coroutine
                # does that, and this one passes every step to it.
                self._inner = waiters.wait_stored(key, self._timeout)
                self._state = DELEGATING
                return self._delegate(None, None)
        self._state = DONE
        if isinstance(found, PendingInput):  # a retained outcome: nothing to block on
            raise StopIteration(outcome(found))
        raise ValueError(f"Unknown human input request: {key}")

    def _delegate(self, value: Any, error: BaseException | None) -> Any:
        inner = self._inner
        assert isinstance(inner, Coroutine)
        try:
            return inner.send(value) if error is None else inner.throw(error)
        except BaseException:  # its return (StopIteration) or its error: this one is done too
            self._state = DONE
            self._inner = None
            raise

    # -- the future its task waits on ---------------------------------------------------------

    def add_done_callback(
        self, callback: Callable[[Wait], object], *, context: Context | None = None
    ) -> None:
        if self._state != BLOCKED:  # woken or cancelled already: as a done future, call it soon
            self._loop.call_soon(callback, self, context=context)
            return
        if self._callback is not None:
            raise RuntimeError("a wait() is awaited by one task")
        self._callback = callback
        self._context = context

    def wake(self) -> None:
        """Its request settled: the task runs again, and returns (or raises) its outcome."""
        if self._state == BLOCKED:
            self._state = WOKEN
            callback, context = self._callback, self._context
            if callback is not None:
                self._callback = self._context = None
                self._loop.call_soon(callback, self, context=context)

    def cancel(self, msg: Any = None) -> bool:
        """The task waiting on it is cancelled: it wakes with CancelledError."""
        if self._state != BLOCKED:
            return False
        self._state = CANCELLED
        self._cancel_message = msg
        self._call_back()
        return True

    def result(self) -> None:
        if self._state == CANCELLED:
            raise self._cancelled_error()

    def done(self) -> bool:
        return self._state in (WOKEN, CANCELLED, DONE)

    def cancelled(self) -> bool:
        return self._state == CANCELLED

    def _call_back(self) -> None:
        callback, context = self._callback, self._context
        if callback is not None:
            self._callback = self._context = None
            self._loop.call_soon(callback, self, context=context)

    def _cancelled_error(self) -> asyncio.CancelledError:
        message = self._cancel_message
        return asyncio.CancelledError() if message is None else asyncio.CancelledError(message)


class Waiters:
    """The wait() calls on requests, and their deadlines (a waiter's timeout may bring one in)."""

    def __init__(
        self,
        ledger: Ledger,
        deadlines: Deadlines,
        settler: Settler,
        holding: Holding,
        tasks: Tasks,
    ) -> None:
        self._worker = holding.worker
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
