"""Holds: which worker decides each request, whether it is alive, and proposals handed to it.

See bot/human_input/holding.py for the rule these rows carry. A worker is alive while its
`holders` row is fresh; a request's `held_by` names the worker deciding it; a `proposals` row is
a settle another worker handed to that one, and the settle that applies it records its id on
the request (`settled_proposal`), which is how its sender learns it won.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, Executable, bindparam, delete, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from bot.records import Decision, RequestStatus, Settlement
from bot.store.request_rows import (
    DELETE_PROPOSAL,
    HELD_BY_LIVE_WORKER,
    MAY_SETTLE,
    NOTIFY,
    SETTLED_CHANNEL,
    settle,
)
from bot.store.tables import PENDING, holders, proposals, requests

# Heartbeats of workers gone for this long are deleted, every PRUNE_EVERY beats of a worker.
HOLDER_RETENTION = timedelta(days=1)
PRUNE_EVERY = 100

_REQUEST = requests.c.id == bindparam("request_id")
LOCK_STATUS = select(requests.c.status).where(_REQUEST).with_for_update()
STATUS = select(requests.c.status).where(_REQUEST)
INSERT_PROPOSAL = insert(proposals)
PROPOSALS = (
    select(proposals)
    .where(proposals.c.request_id == bindparam("request_id"))
    .order_by(proposals.c.at, proposals.c.id)
)
STANDING = select(
    requests.c.status, requests.c.settled_proposal, HELD_BY_LIVE_WORKER.label("held")
).where(_REQUEST)
HOLD = (
    update(requests)
    .where(_REQUEST, requests.c.status == PENDING, MAY_SETTLE)
    .values(held_by=bindparam("worker"))
)
UNHOLD = (
    update(requests).where(_REQUEST, requests.c.held_by == bindparam("worker")).values(held_by=None)
)
WAITING_ON = (
    select(proposals.c.request_id)
    .distinct()
    .join(requests, requests.c.id == proposals.c.request_id)
    .where(requests.c.held_by == bindparam("worker"), requests.c.status == PENDING)
)
PRUNE_HOLDERS = delete(holders).where(holders.c.alive_until < bindparam("before"))


def heartbeat_upsert(dialect: str) -> Executable:
    """Insert or refresh a worker's heartbeat: ON CONFLICT, spelled per dialect."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    beat = dialect_insert(holders)
    statement: Executable = beat.on_conflict_do_update(
        index_elements=[holders.c.worker_id], set_={"alive_until": beat.excluded.alive_until}
    )
    return statement


def propose(
    conn: Connection,
    settlement: Settlement,
    notify: bool,
    now: datetime,
    secret: frozenset[str] = frozenset(),
) -> bool | None:
    if settle(conn, settlement, notify, now, secret):
        return True
    # Locked, so a holder's settle committing now comes before or after this, not between.
    status = conn.execute(LOCK_STATUS, {"request_id": settlement.request_id}).scalar()
    if status != PENDING:
        return False
    conn.execute(INSERT_PROPOSAL, {
        "id": settlement.proposal,
        "request_id": settlement.request_id,
        "status": settlement.status.value,
        "result": settlement.result,
        "reason": settlement.reason,
        "by": settlement.by,
        "at": settlement.at,
    })  # fmt: skip
    if notify:  # wakes the holder (through follow())
        conn.execute(NOTIFY, {"channel": SETTLED_CHANNEL, "id": settlement.request_id})
    return None


def decision(conn: Connection, settlement: Settlement, now: datetime) -> Decision:
    row = conn.execute(STANDING, {"request_id": settlement.request_id, "now": now}).first()
    if row is not None and row.status == PENDING:
        return Decision.PENDING if row.held else Decision.ORPHANED
    conn.execute(DELETE_PROPOSAL, {"proposal": settlement.proposal})
    if row is not None and row.settled_proposal == settlement.proposal:
        return Decision.ACCEPTED
    return Decision.REFUSED


def waiting_proposals(conn: Connection, request_id: str) -> list[Settlement] | None:
    if conn.execute(STATUS, {"request_id": request_id}).scalar() != PENDING:
        return None
    return [
        Settlement(
            row.request_id,
            RequestStatus(row.status),
            row.at,
            row.result,
            row.reason,
            row.by,
            proposal=row.id,
        )
        for row in conn.execute(PROPOSALS, {"request_id": request_id})
    ]


def hold(conn: Connection, request_id: str, worker: str, now: datetime) -> bool:
    values = {"request_id": request_id, "worker": worker, "now": now}
    return conn.execute(HOLD, values).rowcount == 1


def beat(
    conn: Connection,
    upsert: Executable,
    worker: str,
    alive_until: datetime,
    prune_before: datetime | None,
) -> list[str]:
    conn.execute(upsert, {"worker_id": worker, "alive_until": alive_until})
    if prune_before is not None:
        conn.execute(PRUNE_HOLDERS, {"before": prune_before})
    return [row.request_id for row in conn.execute(WAITING_ON, {"worker": worker})]
