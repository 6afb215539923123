"""Requests' escalations (bot.durable.escalations.EscalationRows) on a SqlStore: each method one
transaction running the SQL of bot/store/escalation_rows.py."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.records import AuditEntry, PendingInput
from bot.store import escalation_rows
from bot.store.sql_store import SqlStore


class EscalationTables:
    """Where each open request's escalation stands, on `store`: every worker reads the same
    rows, and a step fires once whichever of them sweeps it first."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def due_requests(self, now: datetime, limit: int = 500) -> list[PendingInput]:
        """Pending requests whose next escalation step is due at `now`, earliest first."""
        return await self.store.read(escalation_rows.due, now, limit)

    async def next_deadline(self) -> datetime | None:
        """When the earliest next escalation step of a pending request is due."""
        return await self.store.read(escalation_rows.next_due)

    async def advance(
        self,
        request_id: str,
        steps: tuple[int, int],
        next_at: datetime | None,
        entry: AuditEntry | None = None,
    ) -> bool:
        """Compare-and-set the request's fired steps from `steps[0]` to `steps[1]` (its next
        due at `next_at`), with `entry` audited; True only for the one caller that moved it."""
        now = datetime.now(UTC)
        return await self.store.write(
            escalation_rows.advance, request_id, steps, next_at, now, entry
        )
