"""An outcome applied: written on the request, its waiters woken, retained, observers told.

The last two steps of every settle (bot/human_input/settler.py): whoever claimed and recorded
it, this is where the request leaves pending in memory, once.
"""

from __future__ import annotations

from bot.human_input.deadlines import disarm
from bot.human_input.ledger import Ledger
from bot.human_input.observers import Observers
from bot.human_input.worker import Worker
from bot.records import HELD, UNTOLD, PendingInput, RequestStatus, Settlement, copy_settled


class Outcomes:
    """Applies outcomes to requests in memory; tells the observers unless another worker did."""

    def __init__(self, worker: Worker, ledger: Ledger, observers: Observers) -> None:
        self._worker = worker
        self._ledger = ledger
        self._observers = observers

    def apply(
        self, request: PendingInput, source: Settlement | PendingInput, *, tell: bool = True
    ) -> None:
        """Write the outcome on the request, then `settled` (unless it settled already)."""
        if request.status is not RequestStatus.PENDING:
            return
        copy_settled(request, source)
        self.settled(request, tell)

    def apply_written(self, request: PendingInput, source: Settlement | PendingInput) -> None:
        """Apply a settle this worker wrote, and tell the observers: the writer tells them,
        also when its own NOTIFY was followed first and applied the row (untold, as another
        worker's), which a busy event loop can do before the write's reply is read."""
        if request.status is RequestStatus.PENDING:
            self.apply(request, source)
        elif request._flags & UNTOLD:
            request._flags &= ~UNTOLD
            self._observers.notify(request)

    def settled(self, request: PendingInput, tell: bool = True) -> None:
        """The outcome is on the request: wake its waiters, retain it, tell the observers
        (or, if `tell` is False, mark it UNTOLD: another worker told them)."""
        if request._flags & HELD:
            self._worker.holding -= 1
        request._flags = 0 if tell else UNTOLD
        disarm(request)
        waiters, request._waiters = request._waiters, None
        if isinstance(waiters, list):
            for waiter in waiters:
                waiter._wake()
        elif waiters is not None:
            waiters._wake()
        self._ledger.retain(request)
        if tell:
            self._observers.notify(request)
