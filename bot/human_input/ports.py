"""The store's ports for requests: their rows (`RequestRows`) and who holds them (`HoldRows`).

The handler writes every request's row before anyone is told, and settles it by one
compare-and-set; across workers, the holder of a request decides its settles and the others
hand theirs over as proposals (holding.py). `HandlerStore` is both: what a handler needs. Other
readers of requests (the router, the surfaces, the commands) take `RequestRows` only.
`bot.bridge.ports.RequestStore` is the whole store, every port at once.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from bot.records import Decision, RequestRecord, Settlement


class RequestRows(Protocol):
    """Requests as rows: created, settled once, read back."""

    async def create_request(self, record: RequestRecord, *, holder: str | None = None) -> None:
        """Insert the request and its `created` audit row; `holder` is the worker holding it."""
        ...

    async def settle(self, settlement: Settlement) -> bool:
        """Compare-and-set pending -> settlement.status, with its audit row; True if it won.
        A request held by a live worker other than `settlement.worker` is not settled."""
        ...

    async def get_request(self, request_id: str) -> RequestRecord | None: ...

    async def request_for_tool_call(self, tool_call_id: str) -> RequestRecord | None:
        """The request a tool call made, if any (a resumed run waits on it, not a new one)."""
        ...

    async def list_pending(self) -> list[RequestRecord]: ...

    async def pending_in_room(self, room_id: str) -> list[RequestRecord]:
        """Pending requests of one room, oldest first."""
        ...

    async def decided_since(self, since: datetime, limit: int = 500) -> list[RequestRecord]:
        """Requests settled at or after `since`, latest first (time-to-decision figures)."""
        ...

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose `expires_at` is at or before `now`, earliest first."""
        ...

    async def next_deadline(self) -> datetime | None:
        """The earliest `expires_at` among pending requests (an index lookup, not a scan)."""
        ...

    async def set_message_ref(self, request_id: str, surface: str, ref: dict[str, Any]) -> None:
        """Keep where `surface` posted the request's message."""
        ...


class HoldRows(Protocol):
    """Which worker holds each pending request, and the settles handed to it."""

    async def propose(self, settlement: Settlement) -> bool | None:
        """Settle as `settle` does (True, or False if already settled); or, when another live
        worker holds the request, hand it `settlement` (id `settlement.proposal`) and return
        None: `decision()` tells how it went."""
        ...

    async def decision(self, settlement: Settlement) -> Decision:
        """Where the proposal `settlement` stands (it is forgotten once decided)."""
        ...

    async def proposals(self, request_id: str) -> list[Settlement] | None:
        """The proposals waiting on a pending request, oldest first; None if it is not pending."""
        ...

    async def hold(self, request_id: str, worker: str) -> bool:
        """Make `worker` the holder of a pending request no live worker holds; True if it is."""
        ...

    async def unhold(self, request_id: str, worker: str) -> None:
        """`worker` no longer holds the request (its proposals go back to their senders)."""
        ...

    async def beat(self, worker: str, alive_until: datetime) -> list[str]:
        """`worker` is alive until `alive_until`; returns its held requests with proposals."""
        ...


class HandlerStore(RequestRows, HoldRows, Protocol):
    """What a `HumanInputHandler` needs of a store: its requests' rows and their holds."""
