"""The `runs` table: who runs the agent of each room, under a lease (bot/durable/leases.py)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Executable, Row, bindparam, select, update
from sqlalchemy.dialects import postgresql, sqlite

from bot.records import RunRecord
from bot.store.tables import runs

_RUN_KEY = (
    runs.c.room_id == bindparam("b_room"),
    runs.c.channel_id == bindparam("b_channel"),
)
RENEW_RUNS = (
    update(runs)
    .where(runs.c.owner == bindparam("b_owner"), runs.c.active.is_(True))
    .values(lease_until=bindparam("b_lease"))
)
FINISH_RUN = (
    update(runs)
    .where(*_RUN_KEY, runs.c.owner == bindparam("b_owner"))
    .values(active=False, owner=None, lease_until=None, stop_by=None, stop_reason=None,
            updated_at=bindparam("b_now"))
)  # fmt: skip
ACTIVE_RUN = select(runs).where(*_RUN_KEY, runs.c.active.is_(True))
ASK_STOP = (
    update(runs)
    .where(*_RUN_KEY, runs.c.active.is_(True))
    .values(stop_by=bindparam("b_by"), stop_reason=bindparam("b_reason"))
)
ACTIVE_RUNS_UNDER = select(runs).where(
    runs.c.room_id.like(bindparam("b_like"), escape="\\"),
    runs.c.channel_id == bindparam("b_channel"),
    runs.c.active.is_(True),
)
STOPS_ASKED = select(runs).where(
    runs.c.owner == bindparam("b_owner"), runs.c.active.is_(True), runs.c.stop_by.is_not(None)
)
RELEASE_RUNS = (
    update(runs)
    .where(runs.c.owner == bindparam("b_owner"), runs.c.active.is_(True))
    .values(lease_until=bindparam("b_now"))
)
SEIZE_RUN = (
    update(runs)
    .where(*_RUN_KEY, runs.c.active.is_(True))
    .values(owner=bindparam("b_owner"), lease_until=bindparam("b_lease"),
            updated_at=bindparam("b_now"))
)  # fmt: skip
ORPHANED_RUNS = (
    select(runs)
    .where(runs.c.active.is_(True), runs.c.lease_until < bindparam("now"))
    .order_by(runs.c.lease_until)
    .limit(bindparam("limit"))
)


def like_prefix(prefix: str) -> str:
    """A LIKE pattern for ids starting with `prefix` (its own % and _ taken literally)."""
    escaped = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped + "%"


def new_run(dialect: str) -> Executable:
    """Taking a room's run in one statement: its first row inserted, or the row taken over if
    it is idle, already ours, or its holder's lease lapsed (a compare-and-set)."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    new = dialect_insert(runs)
    taken = new.excluded
    statement: Executable = new.on_conflict_do_update(
        index_elements=[runs.c.room_id, runs.c.channel_id],
        set_={
            "owner": taken.owner,
            "actor_id": taken.actor_id,
            "lease_until": taken.lease_until,
            "active": True,
            "updated_at": taken.updated_at,
            "stop_by": None,  # a stop asked of an earlier turn is not this one's
            "stop_reason": None,
        },
        where=(runs.c.active.is_(False))
        | (runs.c.owner == taken.owner)
        | (runs.c.lease_until < taken.updated_at),
    )
    return statement


def take_run(conn: Connection, take: Executable, run: dict[str, Any]) -> bool:
    return bool(conn.execute(take, run).rowcount)


def run_of(row: Row[Any]) -> RunRecord:
    return RunRecord(
        room_id=row.room_id,
        channel_id=row.channel_id,
        actor_id=row.actor_id,
        owner=row.owner,
        lease_until=row.lease_until,
        active=bool(row.active),
        stop_by=row.stop_by,
        stop_reason=row.stop_reason,
    )
