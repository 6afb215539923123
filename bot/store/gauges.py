"""What the whole deployment holds, counted in the database for the metrics
(adapters/ops/metrics.py):
the requests still pending, by the surface their room is on, and the webhook deliveries not yet
done. One read, cheap on the indexes (`ix_requests_status_expires_at`, done_at)."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import Connection, case, func, select

from bot.records import RequestStatus
from bot.store.sql_store import SqlStore
from bot.store.tables import requests, webhook_deliveries

SURFACES = ("slack", "teams", "console")  # a room id starts with its surface and a colon
OTHER = "other"  # a room of none of them (a request made in code, without a surface)

_SURFACE = case(
    *((requests.c.room_id.like(f"{surface}:%"), surface) for surface in SURFACES), else_=OTHER
).label("surface")
PENDING = (
    select(_SURFACE, func.count().label("n"))
    .where(requests.c.status == RequestStatus.PENDING.value)
    .group_by(_SURFACE)
)
BACKLOG = (
    select(func.count())
    .select_from(webhook_deliveries)
    .where(webhook_deliveries.c.done_at.is_(None))
)


@dataclass(frozen=True, slots=True)
class DeploymentCounts:
    """The requests pending by surface (every surface named, 0 if none) and the webhook backlog."""

    pending: dict[str, int] = field(default_factory=dict)
    webhook_backlog: int = 0


def counts(conn: Connection) -> DeploymentCounts:
    pending = dict.fromkeys((*SURFACES, OTHER), 0)
    for surface, n in conn.execute(PENDING):
        pending[str(surface)] = int(n)
    return DeploymentCounts(pending, int(conn.execute(BACKLOG).scalar_one()))


class DeploymentGauges:
    """The counts, read from `store` (one read transaction)."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def read(self) -> DeploymentCounts:
        return await self.store.read(counts)
