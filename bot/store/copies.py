"""The `message_copies` table: where each copy of a request, in a room other than its own, was
posted; and `CopyTables` (bot.requests.copies.CopyRefs) over it on a SqlStore, each method one
transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Executable, bindparam, select
from sqlalchemy.dialects import postgresql, sqlite

from bot.store.sql_store import SqlStore
from bot.store.tables import message_copies

REF = select(message_copies.c.ref).where(
    message_copies.c.request_id == bindparam("request_id"),
    message_copies.c.surface == bindparam("surface"),
    message_copies.c.room_id == bindparam("room_id"),
)


def _upsert(conn: Connection) -> Executable:
    """INSERT … ON CONFLICT (request_id, surface, room_id) DO UPDATE in the connection's
    dialect: a copy posted again (its first post's ref lost) replaces the old reference."""
    dialect_insert: Any = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    statement = dialect_insert(message_copies)
    keys = [message_copies.c.request_id, message_copies.c.surface, message_copies.c.room_id]
    upsert: Executable = statement.on_conflict_do_update(
        index_elements=keys, set_={"ref": statement.excluded.ref}
    )
    return upsert


def keep(
    conn: Connection, request_id: str, surface: str, room_id: str, ref: dict[str, Any]
) -> None:
    values = {"request_id": request_id, "surface": surface, "room_id": room_id, "ref": ref}
    conn.execute(_upsert(conn), values)


def ref_of(conn: Connection, request_id: str, surface: str, room_id: str) -> dict[str, Any] | None:
    values = {"request_id": request_id, "surface": surface, "room_id": room_id}
    ref = conn.execute(REF, values).scalar()
    return dict(ref) if ref is not None else None


class CopyTables:
    """Copies' message references, on `store`: any worker (or this one, restarted) edits a
    copy another posted."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def keep(self, request_id: str, surface: str, room_id: str, ref: dict[str, Any]) -> None:
        """Record where `surface` posted the copy of the request in `room_id`."""
        await self.store.write(keep, request_id, surface, room_id, ref)

    async def ref(self, request_id: str, surface: str, room_id: str) -> dict[str, Any] | None:
        """Where the copy in `room_id` was posted; None if it was not (or not yet)."""
        return await self.store.read(ref_of, request_id, surface, room_id)
