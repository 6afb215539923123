"""The `gate_runs` and `grants` tables: approved tool calls run once, and tools allowed unasked.

A gated call's run is claimed by inserting its row (the first insert wins, on every worker) and
finished by writing its result there, with the one-line outcome on the approval's request and
an audit line, in one transaction (bot/gates/gate.py). A grant is a row with its audit line;
revoking it is a compare-and-set on `revoked_at` (bot/gates/grants.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Executable, Row, bindparam, insert, select, update
from sqlalchemy.dialects import postgresql, sqlite

from bot.audit.redaction import redact
from bot.records import GateRun, Grant
from bot.store.tables import audit, gate_runs, grants, requests

GET_RUN = select(gate_runs).where(gate_runs.c.key == bindparam("key"))
RENEW_RUN = (
    update(gate_runs)
    .where(
        gate_runs.c.key == bindparam("b_key"),
        gate_runs.c.worker == bindparam("b_worker"),
        gate_runs.c.finished_at.is_(None),
    )
    .values(lease_until=bindparam("b_until"))
)
FINISH_RUN = (
    update(gate_runs)
    .where(
        gate_runs.c.key == bindparam("b_key"),
        gate_runs.c.worker == bindparam("b_worker"),
        gate_runs.c.finished_at.is_(None),
    )
    .values(
        finished_at=bindparam("b_at"),
        result=bindparam("b_result"),
        error=bindparam("b_error"),
        refused=bindparam("b_refused"),
        outcome=bindparam("b_outcome"),
    )
)
SET_RUN_OUTCOME = (
    update(requests)
    .where(requests.c.id == bindparam("b_request"))
    .values(run_outcome=bindparam("b_outcome"))
)
INSERT_AUDIT = insert(audit)

GET_GRANT = select(grants).where(grants.c.id == bindparam("grant_id"))
LIVE_GRANTS = (
    select(grants)
    .where(
        grants.c.room_id == bindparam("room_id"),
        grants.c.tool_name == bindparam("tool_name"),
        grants.c.actor_id.is_not_distinct_from(bindparam("actor_id")),
        grants.c.revoked_at.is_(None),
        grants.c.expires_at > bindparam("now"),
    )
    .order_by(grants.c.created_at)
)
REVOKE_GRANT = (
    update(grants)
    .where(
        grants.c.id == bindparam("b_id"),
        grants.c.revoked_at.is_(None),
        grants.c.expires_at > bindparam("b_at"),
    )
    .values(revoked_at=bindparam("b_at"), revoked_by=bindparam("b_by"))
)


def inserts(dialect: str) -> tuple[Executable, Executable]:
    """The run's claim and a grant's insert: ON CONFLICT DO NOTHING, spelled per dialect."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    claim = dialect_insert(gate_runs).on_conflict_do_nothing(index_elements=[gate_runs.c.key])
    grant = dialect_insert(grants).on_conflict_do_nothing(index_elements=[grants.c.request_id])
    return claim, grant


# -- runs -------------------------------------------------------------------------------------


def run_of(row: Row[Any]) -> GateRun:
    return GateRun(
        key=row.key,
        tool_name=row.tool_name,
        worker=row.worker,
        claimed_at=row.claimed_at,
        lease_until=row.lease_until,
        request_id=row.request_id,
        finished_at=row.finished_at,
        result=row.result,
        error=row.error,
        refused=bool(row.refused),
        outcome=row.outcome,
    )


def claim_run(conn: Connection, statement: Executable, run: GateRun) -> GateRun | None:
    """Insert `run`'s claim: None if this inserted it, else the run already claimed."""
    values = {
        "key": run.key,
        "request_id": run.request_id,
        "tool_name": run.tool_name,
        "worker": run.worker,
        "claimed_at": run.claimed_at,
        "lease_until": run.lease_until,
        "refused": False,
    }
    if conn.execute(statement, values).rowcount == 1:
        return None
    row = conn.execute(GET_RUN, {"key": run.key}).first()
    assert row is not None  # the conflicting row; runs are never deleted
    return run_of(row)


def get_run(conn: Connection, key: str) -> GateRun | None:
    row = conn.execute(GET_RUN, {"key": key}).first()
    return None if row is None else run_of(row)


def finish_run(conn: Connection, run: GateRun, actor_id: str | None) -> bool:
    """Write the finished `run` (claimed by `run.worker`), its outcome on its request, and its
    audit line; False (nothing written) if it was not this worker's unfinished claim."""
    assert run.finished_at is not None
    finished = conn.execute(FINISH_RUN, {
        "b_key": run.key,
        "b_worker": run.worker,
        "b_at": run.finished_at,
        "b_result": run.result,
        "b_error": run.error,
        "b_refused": run.refused,
        "b_outcome": run.outcome,
    })  # fmt: skip
    if finished.rowcount != 1:
        return False
    if run.request_id is not None:
        conn.execute(SET_RUN_OUTCOME, {"b_request": run.request_id, "b_outcome": run.outcome})
    conn.execute(INSERT_AUDIT, {
        "at": run.finished_at,
        "action": "tool.ran",
        "request_id": run.request_id,
        "actor_id": actor_id,
        "detail": {"tool_name": run.tool_name, "outcome": run.outcome, "run": run.key,
                   "worker": run.worker},
    })  # fmt: skip
    return True


# -- grants -----------------------------------------------------------------------------------


def grant_of(row: Row[Any]) -> Grant:
    return Grant(
        id=row.id,
        room_id=row.room_id,
        actor_id=row.actor_id,
        tool_name=row.tool_name,
        arguments=dict(row.arguments or {}),
        created_at=row.created_at,
        expires_at=row.expires_at,
        granted_by=row.granted_by,
        request_id=row.request_id,
        revoked_at=row.revoked_at,
        revoked_by=row.revoked_by,
    )


def grant_detail(grant: Grant, secret: frozenset[str] = frozenset()) -> dict[str, Any]:
    """What an audit line says of a grant (its scope's redacted values are digests, and the
    audit log's `secret` keys redacted)."""
    return {
        "grant": grant.id,
        "tool_name": grant.tool_name,
        "room_id": grant.room_id,
        "grant_actor": grant.actor_id,
        "arguments": redact(grant.arguments, secret),
        "expires_at": grant.expires_at.isoformat(),
    }


def add_grant(
    conn: Connection, statement: Executable, grant: Grant, secret: frozenset[str] = frozenset()
) -> Grant:
    """Insert `grant` with its audit line; the grant its approval already made, if any."""
    values = {
        "id": grant.id,
        "room_id": grant.room_id,
        "actor_id": grant.actor_id,
        "tool_name": grant.tool_name,
        "arguments": grant.arguments,
        "created_at": grant.created_at,
        "expires_at": grant.expires_at,
        "granted_by": grant.granted_by,
        "request_id": grant.request_id,
    }
    if conn.execute(statement, values).rowcount != 1:
        made = select(grants).where(grants.c.request_id == grant.request_id)
        row = conn.execute(made).first()
        assert row is not None  # the conflicting row
        return grant_of(row)
    conn.execute(INSERT_AUDIT, {
        "at": grant.created_at,
        "action": "grant.created",
        "request_id": grant.request_id,
        "actor_id": grant.granted_by,
        "detail": grant_detail(grant, secret),
    })  # fmt: skip
    return grant


def live_grants(
    conn: Connection, room_id: str, actor_id: str | None, tool_name: str, now: datetime
) -> list[Grant]:
    values = {"room_id": room_id, "actor_id": actor_id, "tool_name": tool_name, "now": now}
    return [grant_of(row) for row in conn.execute(LIVE_GRANTS, values)]


def list_grants(
    conn: Connection, room_prefix: str | None, live_at: datetime | None, limit: int
) -> list[Grant]:
    """Grants, newest first: of rooms starting with `room_prefix`, live at `live_at`."""
    query = select(grants).order_by(grants.c.created_at.desc(), grants.c.id).limit(limit)
    if room_prefix:
        query = query.where(grants.c.room_id.startswith(room_prefix, autoescape=True))
    if live_at is not None:
        query = query.where(grants.c.revoked_at.is_(None), grants.c.expires_at > live_at)
    return [grant_of(row) for row in conn.execute(query)]


def get_grant(conn: Connection, grant_id: str) -> Grant | None:
    row = conn.execute(GET_GRANT, {"grant_id": grant_id}).first()
    return None if row is None else grant_of(row)


def revoke_grant(
    conn: Connection,
    grant_id: str,
    by: str | None,
    at: datetime,
    secret: frozenset[str] = frozenset(),
) -> Grant | None:
    """Revoke a live grant with its audit line; the grant as revoked, None if none was live."""
    if conn.execute(REVOKE_GRANT, {"b_id": grant_id, "b_by": by, "b_at": at}).rowcount != 1:
        return None
    grant = get_grant(conn, grant_id)
    assert grant is not None
    conn.execute(INSERT_AUDIT, {
        "at": at,
        "action": "grant.revoked",
        "request_id": grant.request_id,
        "actor_id": by,
        "detail": grant_detail(grant, secret),
    })  # fmt: skip
    return grant
