"""Deadlines: every request's timer, without a loop timer per request.

Requests armed with the same timeout fall due in the order they were armed, since the loop's
clock only moves forward; so each timeout has one queue, a list in deadline order, and one loop
timer, for the first deadline still live in it. Taking a settled or re-armed request out of a
list would be a search, so it is left there: a request's entry is live while the request names
the queue (`_timer`) and that entry's deadline object (`_deadline`), skipped when reached, and
a queue drops its dead entries once they outnumber its live ones.

Per pending request that is a float and two list slots, where a timer of its own was a
TimerHandle, its arguments tuple, its deadline float and a slot in the loop's heap (≈ 190 B more,
bench/human_input_bench.py), and settling it cancels nothing.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
from collections.abc import Callable
from contextvars import Context

from bot.records import PendingInput

log = logging.getLogger("bot.human_input")

# Dead entries a queue keeps beside its live ones before it drops them (a pass over the queue).
SLACK = 64


class DeadlineQueue:
    """The requests armed for one timeout, in deadline order (from `head`), and its loop timer."""

    __slots__ = ("deadlines", "handle", "head", "live", "loop", "requests", "seconds", "when")

    def __init__(self, seconds: float, loop: asyncio.AbstractEventLoop) -> None:
        self.seconds = seconds
        self.loop = loop
        self.requests: list[PendingInput] = []
        self.deadlines: list[float] = []  # the same float objects as the requests' `_deadline`
        self.head = 0  # entries before it are spent
        self.live = 0  # entries whose request is still armed here
        self.handle: asyncio.TimerHandle | None = None
        self.when = 0.0  # the loop time `handle` fires at

    def clear(self) -> None:
        self.requests.clear()
        self.deadlines.clear()
        self.head = 0

    def drop_dead(self) -> None:
        """Keep only the live entries (a pass over the queue, once dead ones pile up)."""
        requests: list[PendingInput] = []
        deadlines: list[float] = []
        start = self.head
        for request, deadline in zip(self.requests[start:], self.deadlines[start:], strict=True):
            if request._timer is self and request._deadline is deadline:
                requests.append(request)
                deadlines.append(deadline)
        self.requests, self.deadlines, self.head = requests, deadlines, 0


def disarm(request: PendingInput) -> None:
    """The request no longer falls due (settled, re-armed, or forgotten): its entry is left in
    its queue, dead, and needs nothing of the `Deadlines` that armed it."""
    queue = request._timer
    if queue is None:
        return
    request._timer = None
    queue.live -= 1
    if queue.live == 0:
        # Its timer is left to fire once and find nothing: cancelling it, and arming
        # another for the next request, would cost what a timer per request did.
        queue.clear()
    elif len(queue.requests) - queue.head > 2 * queue.live + SLACK:
        queue.drop_dead()


class Deadlines:
    """Arms requests' deadlines; `expire(request)` is called when one passes."""

    def __init__(self, expire: Callable[[PendingInput], None]) -> None:
        self._expire = expire
        self._queues: dict[float, DeadlineQueue] = {}
        # The timers' callbacks run in one shared empty context rather than a copy each.
        self._context = Context()

    def arm(self, request: PendingInput, seconds: float) -> None:
        """The request falls due `seconds` from now (instead of when it was armed for)."""
        disarm(request)
        loop = asyncio.get_running_loop()
        queue = self._queues.get(seconds)
        if queue is None or queue.loop is not loop:
            queue = self._queues[seconds] = DeadlineQueue(seconds, loop)
        deadline = loop.time() + seconds
        request._timer = queue
        request._deadline = deadline
        queue.live += 1
        deadlines = queue.deadlines
        if not deadlines or deadlines[-1] <= deadline:
            queue.requests.append(request)
            deadlines.append(deadline)
        else:  # a clock set back (a test's, say): keep the queue in order
            at = bisect.bisect_right(deadlines, deadline, lo=queue.head)
            queue.requests.insert(at, request)
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
        requests, deadlines = queue.requests, queue.deadlines
        due: list[PendingInput] = []
        i, end = queue.head, len(requests)
        while i < end:
            request, deadline = requests[i], deadlines[i]
            if request._timer is queue and request._deadline is deadline:
                if deadline > now:
                    break
                request._timer = None
                queue.live -= 1
                due.append(request)
            i += 1
        queue.head = i
        if queue.live <= 0 or i >= end:
            queue.live = 0
            queue.clear()
            if self._queues.get(queue.seconds) is queue:
                del self._queues[queue.seconds]
        else:
            if i > SLACK and 2 * i > end:  # the spent entries are the larger part: drop them
                del requests[:i], deadlines[:i]
                queue.head = 0
            self._set_timer(queue, deadlines[queue.head])
        # Expired only once the queue is consistent: an expiry may settle, arm or disarm others.
        for request in due:
            try:
                self._expire(request)
            except Exception:
                log.exception("expiring %s failed", request.id)
