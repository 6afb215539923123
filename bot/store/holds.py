"""Holds: which worker decides each request, whether it is alive, and proposals handed to it.

See bot/human_input/holding.py for the rule these rows carry. A worker is alive while its
`holders` row is fresh; a request's `held_by` names the worker deciding it; a `proposals` row is
a settle another worker handed to that one, and the settle that applies it records its id on
the request (`settled_proposal`), which is how its sender learns it won.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    Executable,
    String,
    bindparam,
    delete,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite

from bot.records import Decision, RequestStatus, Settlement
from bot.store.prepared import execute
from bot.store.request_rows import (
    DELETE_PROPOSAL,
    HELD_BY_LIVE_WORKER,
    MAY_SETTLE,
    SETTLE,
    SETTLED,
    SETTLED_CHANNEL,
    audit_of,
    settle,
)
from bot.store.schema import UTCDateTime
from bot.store.tables import PENDING, holders, proposals, requests

# Heartbeats of workers gone for this long are deleted, every PRUNE_EVERY beats of a worker.
HOLDER_RETENTION = timedelta(days=1)
PRUNE_EVERY = 100

_REQUEST = requests.c.id == bindparam("request_id")
LOCK_STATUS = select(requests.c.status).where(_REQUEST).with_for_update()
STATUS = select(requests.c.status).where(_REQUEST)
INSERT_PROPOSAL = insert(proposals).values(
    id=bindparam("proposal"),
    request_id=bindparam("request_id"),
    status=bindparam("new_status"),
    result=bindparam("new_result"),
    reason=bindparam("new_reason"),
    by=bindparam("new_by"),
    at=bindparam("new_at"),
)
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


PROPOSED = (*SETTLED, INSERT_PROPOSAL)  # what `propose` may run (bot/store/prepared.Bound)


def propose(conn: Connection, values: Mapping[str, Any]) -> bool | None:
    """SQLite: settle (`settle_values`), or hand the settle to the request's holder."""
    if settle(conn, values):
        return True
    # Locked, so a holder's settle committing now comes before or after this, not between.
    status = conn.execute(LOCK_STATUS, {"request_id": values["request_id"]}).scalar()
    if status != PENDING:
        return False
    execute(conn, INSERT_PROPOSAL, values)
    return None


# PostgreSQL, in one statement: the compare-and-set with its audit row if it won; if not, and
# the request is still pending (its row locked, as above), the proposal; either way, the
# NOTIFY that wakes the holder and the waiter. No row comes back when neither happened.
_won = SETTLE.returning(requests.c.id).cte("won")
_logged = audit_of(_won, bindparam("action", type_=String())).cte("logged")
_still_open = (
    select(requests.c.id)
    .where(_REQUEST, requests.c.status == PENDING, ~exists().select_from(_won))
    .with_for_update()
    .cte("still_open")
)
_handed = (
    insert(proposals)
    .from_select(
        ["id", "request_id", "status", "result", "reason", "by", "at"],
        select(
            bindparam("proposal", type_=String()),
            _still_open.c.id,
            bindparam("new_status", type_=String()),
            bindparam("new_result", type_=String()),
            bindparam("new_reason", type_=String()),
            bindparam("new_by", type_=String()),
            bindparam("new_at", type_=UTCDateTime()),
        ).select_from(_still_open),
    )
    .returning(proposals.c.id)
    .cte("handed")
)
PROPOSE_ONE = (
    select(
        exists().select_from(_won).label("won"),
        func.pg_notify(SETTLED_CHANNEL, bindparam("request_id")),
    )
    .where(or_(exists().select_from(_won), exists().select_from(_handed)))
    .add_cte(_logged)
)


def decision(conn: Connection, settlement: Settlement, now: datetime) -> Decision:
    """SQLite: where the proposal stands; forgotten (deleted) once the request settled."""
    row = conn.execute(STANDING, {"request_id": settlement.request_id, "now": now}).first()
    if row is not None and row.status == PENDING:
        return Decision.PENDING if row.held else Decision.ORPHANED
    conn.execute(DELETE_PROPOSAL, {"proposal": settlement.proposal})
    return decided(None if row is None else dict(row._mapping), settlement.proposal)


def decided(standing: Mapping[str, Any] | None, proposal: str | None) -> Decision:
    """A proposal's standing from its request's (`STANDING`'s columns; None: no request)."""
    if standing is not None and standing["status"] == PENDING:
        return Decision.PENDING if standing["held"] else Decision.ORPHANED
    if standing is not None and standing["settled_proposal"] == proposal:
        return Decision.ACCEPTED
    return Decision.REFUSED


# PostgreSQL, in one statement: the request's standing, and the proposal deleted unless the
# request is still pending.
_standing = STANDING.cte("standing")
_forgotten = DELETE_PROPOSAL.where(
    ~exists().where(_standing.c.status == PENDING).select_from(_standing)
).cte("forgotten")
DECISION_ONE = select(_standing).add_cte(_forgotten)

# The request's status with its waiting proposals (none: one row of NULLs), oldest first.
STATUS_AND_PROPOSALS = (
    select(requests.c.status.label("request_status"), proposals)
    .select_from(requests.outerjoin(proposals, proposals.c.request_id == requests.c.id))
    .where(_REQUEST)
    .order_by(proposals.c.at, proposals.c.id)
)


def waiting_proposals(conn: Connection, request_id: str) -> list[Settlement] | None:
    rows = conn.execute(STATUS_AND_PROPOSALS, {"request_id": request_id})
    return proposals_of([dict(row._mapping) for row in rows])


def proposals_of(rows: Sequence[Mapping[str, Any]]) -> list[Settlement] | None:
    """`STATUS_AND_PROPOSALS`'s rows as the proposals waiting; None if not pending."""
    if not rows or rows[0]["request_status"] != PENDING:
        return None
    return [
        Settlement(
            row["request_id"], RequestStatus(row["status"]), row["at"], row["result"],
            row["reason"], row["by"], proposal=row["id"],
        )
        for row in rows
        if row["id"] is not None
    ]  # fmt: skip


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
