"""The requests a handler knows: those still active, each with the handler's own state of it
(an `Entry`), and the retained outcomes.

The entry is the one owner of a request's state here: its waiters, its deadline, its flags.
The record (`PendingInput`) is what everyone else reads; only the settle writes its outcome
on it (bot/human_input/settler.py), and nothing else of the handler hangs on it.

RoomKit's rules: a request stays active, settled or not, until wait() retires it (or release()
drops it), so an answer recorded before anyone waits is never lost whatever `retention` is;
the latest `retention` outcomes stay replayable after that (0: none).

Deadlines: every request's timer, without a loop timer per request. Requests armed with the
same timeout fall due in the order they were armed, since the loop's clock only moves forward;
so each timeout has one queue, a list in deadline order, and one loop timer, for the first
deadline still live in it. Taking a settled or re-armed request out of a list would be a
search, so it is left there: a request's place is live while its entry names the queue
(`queue`) and that place's deadline object (`deadline`), skipped when reached, and a queue
drops its dead places once they outnumber its live ones.

Per pending request that is a float and two list slots, where a timer of its own was a
TimerHandle, its arguments tuple, its deadline float and a slot in the loop's heap (≈ 190 B more,
bench/human_input_bench.py), and settling it cancels nothing.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections import OrderedDict
from collections.abc import Callable
from contextvars import Context
from typing import Protocol

from bot.records import PendingInput, RequestStatus

log = logging.getLogger("bot.human_input")


class Waker(Protocol):
    """A wait() blocked on a request (bot/human_input/waiter.py's `Wait`): its settle wakes it."""

    def wake(self) -> None: ...


# An entry's flags (small ints: no allocation).
CLAIMED = 1  # a settle is being written: no other settle may start
HELD = 2  # its row is held by this worker: this worker decides its settle (holding.py)
FOREIGN = 4  # its row is held by another live worker, or not yet known to be ours
UNTOLD = 8  # settled here from a row another worker wrote: that worker told the observers


class Entry:
    """A request as this handler keeps it: the record, the wait() calls blocked on it (one,
    or a list for a second: cancelling one leaves the others waiting), the deadline queue it
    is armed in and its deadline on the loop's clock (`Deadlines` below), the seconds a timeout's
    message names, and its flags."""

    __slots__ = ("deadline", "flags", "queue", "request", "seconds", "waiters")

    def __init__(self, request: PendingInput, flags: int = 0) -> None:
        self.request = request
        self.waiters: Waker | list[Waker] | None = None
        self.queue: DeadlineQueue | None = None
        self.deadline = 0.0
        self.seconds = 0.0
        self.flags = flags


class Ledger:
    """`active`: created or loaded here and not yet retired nor dropped; `settled`: the latest
    `retention` outcomes, filled as they are settled."""

    def __init__(self, retention: int) -> None:
        self.retention = retention
        self.active: dict[str, Entry] = {}
        self.settled: OrderedDict[str, PendingInput] = OrderedDict()

    def find(self, request_id: str) -> PendingInput | None:
        """The request in memory: active, else retained."""
        entry = self.active.get(request_id)
        return entry.request if entry is not None else self.settled.get(request_id)

    def pending(self) -> dict[str, PendingInput]:
        return {
            k: e.request
            for k, e in self.active.items()
            if e.request.status is RequestStatus.PENDING
        }

    def retain(self, request: PendingInput) -> None:
        if self.retention <= 0:
            return
        settled = self.settled
        settled[request.id] = request
        settled.move_to_end(request.id)
        while len(settled) > self.retention:
            settled.popitem(last=False)

    def retire(self, entry: Entry) -> None:
        """wait() is done with the request: it leaves the active set (its outcome stays in the
        retention). A detached request is its creator's to release()."""
        request = entry.request
        if not request.detached and self.active.get(request.id) is entry:
            del self.active[request.id]

    def for_tool_call(self, tool_call_id: str) -> PendingInput | None:
        """A scan of the requests in memory: for rare paths only (resume, a dropped call)."""
        for entry in self.active.values():
            if entry.request.tool_call_id == tool_call_id:
                return entry.request
        for request in self.settled.values():
            if request.tool_call_id == tool_call_id:
                return request
        return None


# Dead entries a queue keeps beside its live ones before it drops them (a pass over the queue).
SLACK = 64


class DeadlineQueue:
    """The requests armed for one timeout, in deadline order (from `head`), and its loop timer."""

    __slots__ = ("deadlines", "entries", "handle", "head", "live", "loop", "seconds", "when")

    def __init__(self, seconds: float, loop: asyncio.AbstractEventLoop) -> None:
        self.seconds = seconds
        self.loop = loop
        self.entries: list[Entry] = []
        self.deadlines: list[float] = []  # the same float objects as the entries' `deadline`
        self.head = 0  # entries before it are spent
        self.live = 0  # entries whose request is still armed here
        self.handle: asyncio.TimerHandle | None = None
        self.when = 0.0  # the loop time `handle` fires at

    def clear(self) -> None:
        self.entries.clear()
        self.deadlines.clear()
        self.head = 0

    def drop_dead(self) -> None:
        """Keep only the live entries (a pass over the queue, once dead ones pile up)."""
        entries: list[Entry] = []
        deadlines: list[float] = []
        start = self.head
        for entry, deadline in zip(self.entries[start:], self.deadlines[start:], strict=True):
            if entry.queue is self and entry.deadline is deadline:
                entries.append(entry)
                deadlines.append(deadline)
        self.entries, self.deadlines, self.head = entries, deadlines, 0


def disarm(entry: Entry) -> None:
    """The request no longer falls due (settled, re-armed, or forgotten): its place is left in
    its queue, dead, and needs nothing of the `Deadlines` that armed it."""
    queue = entry.queue
    if queue is None:
        return
    entry.queue = None
    queue.live -= 1
    if queue.live == 0:
        # Its timer is left to fire once and find nothing: cancelling it, and arming
        # another for the next request, would cost what a timer per request did.
        queue.clear()
    elif len(queue.entries) - queue.head > 2 * queue.live + SLACK:
        queue.drop_dead()


class Deadlines:
    """Arms requests' deadlines; `expire(entry)` is called when one passes."""

    def __init__(self, expire: Callable[[Entry], None]) -> None:
        self._expire = expire
        self._queues: dict[float, DeadlineQueue] = {}
        # The timers' callbacks run in one shared empty context rather than a copy each.
        self._context = Context()

    def arm(self, entry: Entry, seconds: float) -> None:
        """The request falls due `seconds` from now (instead of when it was armed for)."""
        disarm(entry)
        loop = asyncio.get_running_loop()
        queue = self._queues.get(seconds)
        if queue is None or queue.loop is not loop:
            queue = self._queues[seconds] = DeadlineQueue(seconds, loop)
        deadline = loop.time() + seconds
        entry.queue = queue
        entry.deadline = deadline
        queue.live += 1
        deadlines = queue.deadlines
        if not deadlines or deadlines[-1] <= deadline:
            queue.entries.append(entry)
            deadlines.append(deadline)
        else:  # a clock set back (a test's, say): keep the queue in order
            at = bisect.bisect_right(deadlines, deadline, lo=queue.head)
            queue.entries.insert(at, entry)
            deadlines.insert(at, deadline)
        if queue.handle is None or deadline < queue.when:
            self._set_timer(queue, deadline)

    def _set_timer(self, queue: DeadlineQueue, when: float) -> None:
        if queue.handle is not None:
            queue.handle.cancel()
        queue.when = when
        queue.handle = queue.loop.call_at(when, self._fire, queue, context=self._context)

    def _fire(self, queue: DeadlineQueue) -> None:
        """The queue's timer: expire what is due, then sleep until the next live deadline."""
        queue.handle = None
        # The loop ran this timer because `when` is due by its clock: so is all up to it.
        now = max(queue.loop.time(), queue.when)
        entries, deadlines = queue.entries, queue.deadlines
        due: list[Entry] = []
        i, end = queue.head, len(entries)
        while i < end:
            entry, deadline = entries[i], deadlines[i]
            if entry.queue is queue and entry.deadline is deadline:
                if deadline > now:
                    break
                entry.queue = None
                queue.live -= 1
                due.append(entry)
            i += 1
        queue.head = i
        if queue.live <= 0 or i >= end:
            queue.live = 0
            queue.clear()
            if self._queues.get(queue.seconds) is queue:
                del self._queues[queue.seconds]
        else:
            if i > SLACK and 2 * i > end:  # the spent entries are the larger part: drop them
                del entries[:i], deadlines[:i]
                queue.head = 0
            self._set_timer(queue, deadlines[queue.head])
        # Expired only once the queue is consistent: an expiry may settle, arm or disarm others.
        for entry in due:
            try:
                self._expire(entry)
            except Exception:
                log.exception("expiring %s failed", entry.request.id)
