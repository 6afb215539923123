"""The `runs` table: who runs the agent of each room, under a lease (bot/runs.py)."""

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
# Taking a run is a compare-and-set too: idle, already ours, or its holder's lease lapsed.
TAKE_RUN = (
    update(runs)
    .where(
        *_RUN_KEY,
        (runs.c.active.is_(False))
        | (runs.c.owner == bindparam("b_owner"))
        | (runs.c.lease_until < bindparam("b_now")),
    )
    .values(
        owner=bindparam("b_owner"),
        actor_id=bindparam("b_actor"),
        lease_until=bindparam("b_lease"),
        active=True,
        updated_at=bindparam("b_now"),
    )
)
RENEW_RUNS = (
    update(runs)
    .where(runs.c.owner == bindparam("b_owner"), runs.c.active.is_(True))
    .values(lease_until=bindparam("b_lease"))
)
FINISH_RUN = (
    update(runs)
    .where(*_RUN_KEY, runs.c.owner == bindparam("b_owner"))
    .values(active=False, owner=None, lease_until=None, updated_at=bindparam("b_now"))
)
RELEASE_RUNS = (
    update(runs)
    .where(runs.c.owner == bindparam("b_owner"), runs.c.active.is_(True))
    .values(lease_until=bindparam("b_now"))
)
ORPHANED_RUNS = (
    select(runs)
    .where(runs.c.active.is_(True), runs.c.lease_until < bindparam("now"))
    .order_by(runs.c.lease_until)
    .limit(bindparam("limit"))
)


def new_run(dialect: str) -> Executable:
    """Insert a room's first run, or nothing if the room already has a row."""
    dialect_insert: Any = postgresql.insert if dialect == "postgresql" else sqlite.insert
    keys = [runs.c.room_id, runs.c.channel_id]
    statement: Executable = dialect_insert(runs).on_conflict_do_nothing(index_elements=keys)
    return statement


def take_run(conn: Connection, new: Executable, run: dict[str, Any]) -> bool:
    if conn.execute(new, run).rowcount:
        return True
    binds = {
        "b_room": run["room_id"],
        "b_channel": run["channel_id"],
        "b_owner": run["owner"],
        "b_actor": run["actor_id"],
        "b_lease": run["lease_until"],
        "b_now": run["updated_at"],
    }
    return bool(conn.execute(TAKE_RUN, binds).rowcount)


def run_of(row: Row[Any]) -> RunRecord:
    return RunRecord(
        room_id=row.room_id,
        channel_id=row.channel_id,
        actor_id=row.actor_id,
        owner=row.owner,
        lease_until=row.lease_until,
        active=bool(row.active),
    )
