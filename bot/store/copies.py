"""Where the copies of requests were posted (bot.requests.copies.CopyRefs) on a SqlStore: each
method one transaction running the SQL of bot/store/copy_rows.py."""

from __future__ import annotations

from typing import Any

from bot.store import copy_rows
from bot.store.sql_store import SqlStore


class CopyTables:
    """Copies' message references, on `store`: any worker (or this one, restarted) edits a
    copy another posted."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def keep(self, request_id: str, surface: str, room_id: str, ref: dict[str, Any]) -> None:
        """Record where `surface` posted the copy of the request in `room_id`."""
        await self.store.write(copy_rows.keep, request_id, surface, room_id, ref)

    async def ref(self, request_id: str, surface: str, room_id: str) -> dict[str, Any] | None:
        """Where the copy in `room_id` was posted; None if it was not (or not yet)."""
        return await self.store.read(copy_rows.ref_of, request_id, surface, room_id)
