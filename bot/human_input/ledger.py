"""The requests a handler knows: those still active, and the retained outcomes.

RoomKit's rules: a request stays active, settled or not, until wait() retires it (or release()
drops it), so an answer recorded before anyone waits is never lost whatever `retention` is;
the latest `retention` outcomes stay replayable after that (0: none).
"""

from __future__ import annotations

from collections import OrderedDict

from bot.records import PendingInput, RequestStatus


class Ledger:
    """`active`: created or loaded here and not yet retired nor dropped; `settled`: the latest
    `retention` outcomes, filled as they are settled."""

    def __init__(self, retention: int) -> None:
        self.retention = retention
        self.active: dict[str, PendingInput] = {}
        self.settled: OrderedDict[str, PendingInput] = OrderedDict()

    def find(self, request_id: str) -> PendingInput | None:
        """The request in memory: active, else retained."""
        return self.active.get(request_id) or self.settled.get(request_id)

    def pending(self) -> dict[str, PendingInput]:
        return {k: p for k, p in self.active.items() if p.status is RequestStatus.PENDING}

    def retain(self, request: PendingInput) -> None:
        if self.retention <= 0:
            return
        settled = self.settled
        settled[request.id] = request
        settled.move_to_end(request.id)
        while len(settled) > self.retention:
            settled.popitem(last=False)

    def retire(self, request: PendingInput) -> None:
        """wait() is done with the request: it leaves the active set (its outcome stays in the
        retention). A detached request is its creator's to release()."""
        if not request.detached and self.active.get(request.id) is request:
            del self.active[request.id]

    def for_tool_call(self, tool_call_id: str) -> PendingInput | None:
        """A scan of the requests in memory: for rare paths only (resume, a dropped call)."""
        for request in (*self.active.values(), *self.settled.values()):
            if request.tool_call_id == tool_call_id:
                return request
        return None
