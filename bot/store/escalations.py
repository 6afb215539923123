"""Requests' escalations in SQL, and `EscalationTables` (bot.durable.escalations.EscalationRows)
over them on a SqlStore, each method one transaction.

A request's row says how many of its rule's escalation steps have fired (`escalation_step`)
and when the next is due (`next_escalation_at`). A step fires by a compare-and-set from the
step count a worker read: of several workers sweeping the same due row, exactly one moves it
on (and writes the step's audit line, in the same transaction); a request no longer pending,
or whose deadline has passed, moves no further.
"""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Connection, bindparam, or_, select, update

from bot.records import AuditEntry, PendingInput
from bot.store.journal import INSERT_AUDIT, audit_values
from bot.store.request_rows import record_of
from bot.store.sql_store import SqlStore
from bot.store.tables import PENDING, requests

# Both are range scans of ix_requests_status_next_escalation_at.
DUE = (
    select(requests)
    .where(requests.c.status == PENDING, requests.c.next_escalation_at <= bindparam("now"))
    .order_by(requests.c.next_escalation_at)
    .limit(bindparam("limit"))
)
NEXT = (
    select(requests.c.next_escalation_at)
    .where(requests.c.status == PENDING, requests.c.next_escalation_at.is_not(None))
    .order_by(requests.c.next_escalation_at)
    .limit(1)
)
ADVANCE = (
    update(requests)
    .where(
        requests.c.id == bindparam("b_id"),
        requests.c.status == PENDING,
        requests.c.escalation_step == bindparam("b_from"),
        or_(requests.c.expires_at.is_(None), requests.c.expires_at > bindparam("b_now")),
    )
    .values(escalation_step=bindparam("b_to"), next_escalation_at=bindparam("b_next"))
)


def due(conn: Connection, now: datetime, limit: int) -> list[PendingInput]:
    """Pending requests whose next escalation step is due at `now`, earliest first."""
    return [record_of(row) for row in conn.execute(DUE, {"now": now, "limit": limit})]


def next_due(conn: Connection) -> datetime | None:
    """The earliest next escalation among pending requests."""
    row = conn.execute(NEXT).first()
    return None if row is None else row.next_escalation_at


def advance(
    conn: Connection,
    request_id: str,
    steps: tuple[int, int],
    next_at: datetime | None,
    now: datetime,
    entry: AuditEntry | None,
) -> bool:
    """Move the request from `steps[0]` fired steps to `steps[1]`, its next step due at
    `next_at`, with `entry` in the audit log; False (nothing written) if it is not pending at
    `steps[0]` any more, or its deadline passed: another worker fired the step, or it ended."""
    values = {"b_id": request_id, "b_from": steps[0], "b_to": steps[1], "b_next": next_at,
              "b_now": now}  # fmt: skip
    if conn.execute(ADVANCE, values).rowcount != 1:
        return False
    if entry is not None:
        conn.execute(INSERT_AUDIT, audit_values(entry))
    return True


class EscalationTables:
    """Where each open request's escalation stands, on `store`: every worker reads the same
    rows, and a step fires once whichever of them sweeps it first."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def due_requests(self, now: datetime, limit: int = 500) -> list[PendingInput]:
        """Pending requests whose next escalation step is due at `now`, earliest first."""
        return await self.store.read(due, now, limit)

    async def next_deadline(self) -> datetime | None:
        """When the earliest next escalation step of a pending request is due."""
        return await self.store.read(next_due)

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
        return await self.store.write(advance, request_id, steps, next_at, now, entry)
