"""Plain records the core hands to its store: no SQL here, only what a row holds.

`bot.store` implements `RequestStore` with SQLAlchemy; the in-memory handler needs none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol


class RequestStatus(StrEnum):
    """The stored status of a request; `pending` is the only status a settle may leave."""

    PENDING = "pending"
    RESOLVED = "resolved"
    REJECTED = "rejected"
    TIMED_OUT = "timed_out"
    CANCELLED = "cancelled"


@dataclass(slots=True)
class RequestRecord:
    """One human-input request as the database holds it."""

    id: str
    tool_name: str
    arguments: dict[str, Any]
    room_id: str
    tool_call_id: str
    channel_id: str
    channel_type: str
    actor_id: str | None
    detached: bool
    created_at: datetime
    expires_at: datetime | None
    status: RequestStatus = RequestStatus.PENDING
    result: str | None = None
    reason: str | None = None
    settled_by: str | None = None
    settled_at: datetime | None = None
    # Where each surface posted the request, e.g. {"slack": {"channel": "C1", "ts": "1.2"}}.
    message_refs: dict[str, dict[str, Any]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Settlement:
    """The one transition a settle asks for: pending -> status."""

    request_id: str
    status: RequestStatus
    at: datetime
    result: str | None = None
    reason: str | None = None
    by: str | None = None


@dataclass(frozen=True, slots=True)
class AuditEntry:
    """One line of the append-only audit log."""

    action: str
    at: datetime
    request_id: str | None = None
    actor_id: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    id: int | None = None


@dataclass(frozen=True, slots=True)
class RunRecord:
    """The agent run of one room: who holds it and until when (a lapsed lease is adoptable)."""

    room_id: str
    channel_id: str
    actor_id: str | None
    owner: str | None
    lease_until: datetime | None
    active: bool


class RequestStore(Protocol):
    """What the core needs from a database. Every method is one transaction."""

    async def create_request(self, record: RequestRecord) -> None:
        """Insert the request and its `created` audit row."""
        ...

    async def settle(self, settlement: Settlement) -> bool:
        """Compare-and-set pending -> settlement.status, with its audit row; True if it won."""
        ...

    async def get_request(self, request_id: str) -> RequestRecord | None: ...

    async def list_pending(self) -> list[RequestRecord]: ...

    async def due_requests(self, now: datetime, limit: int = 500) -> list[RequestRecord]:
        """Pending requests whose `expires_at` is at or before `now`, earliest first."""
        ...

    async def next_deadline(self) -> datetime | None:
        """The earliest `expires_at` among pending requests (an index lookup, not a scan)."""
        ...

    async def set_message_ref(self, request_id: str, surface: str, ref: dict[str, Any]) -> None: ...

    async def append_audit(self, entry: AuditEntry) -> None: ...

    async def list_audit(
        self, *, request_id: str | None = None, limit: int = 100
    ) -> list[AuditEntry]: ...

    async def save_transcript(
        self, room_id: str, channel_id: str, messages: list[dict[str, Any]]
    ) -> None:
        """Replace the agent transcript of one room (saved at every tool boundary)."""
        ...

    async def load_transcript(self, room_id: str, channel_id: str) -> list[dict[str, Any]]: ...

    async def request_for_tool_call(self, tool_call_id: str) -> RequestRecord | None:
        """The request a tool call made, if any (a resumed run waits on it, not a new one)."""
        ...

    async def pending_in_room(self, room_id: str) -> list[RequestRecord]:
        """Pending requests of one room, oldest first."""
        ...

    async def claim_run(
        self, room_id: str, channel_id: str, owner: str, actor_id: str | None, lease_until: datetime
    ) -> bool:
        """Take the room's run if it is idle, ours, or its lease lapsed; True if we hold it."""
        ...

    async def renew_runs(self, owner: str, lease_until: datetime) -> int:
        """Extend every lease `owner` holds; returns how many."""
        ...

    async def finish_run(self, room_id: str, channel_id: str, owner: str) -> None:
        """The run is over: the room is idle again."""
        ...

    async def release_runs(self, owner: str, now: datetime) -> int:
        """Let every run of `owner` lapse now (a graceful shutdown): others adopt them."""
        ...

    async def orphaned_runs(self, now: datetime, limit: int = 100) -> list[RunRecord]:
        """Active runs whose lease lapsed: their worker is gone."""
        ...

    async def listen_settled(
        self, callback: Callable[[str], None]
    ) -> Callable[[], Awaitable[None]]:
        """Call `callback(request_id)` when another process settles a request (PostgreSQL
        NOTIFY; a no-op where one process owns the database). Returns the stopper."""
        ...

    async def claim_once(self, key: str) -> bool:
        """True for the first caller of `key` across every worker (event de-duplication)."""
        ...

    async def close(self) -> None: ...
