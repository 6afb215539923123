"""The admin console's signed-in sessions (adapters/doors/admin/auth.py's SessionStore) on a
SqlStore: a row per session, keyed by the SHA-256 of its nonce, deleted at sign-out."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Connection, delete, insert, select

from bot.store.sql_store import SqlStore
from bot.store.tables import admin_sessions


def _open(conn: Connection, key: str, holder: str, now: datetime, expires: datetime) -> None:
    """Insert the session's row, and forget the sessions that have expired meanwhile."""
    conn.execute(delete(admin_sessions).where(admin_sessions.c.expires_at <= now))
    conn.execute(insert(admin_sessions).values(
        id=key, holder=holder, created_at=now, expires_at=expires,
    ))  # fmt: skip


def _holder(conn: Connection, key: str, now: datetime) -> str | None:
    query = select(admin_sessions.c.holder).where(
        admin_sessions.c.id == key, admin_sessions.c.expires_at > now
    )
    return conn.execute(query).scalar_one_or_none()


def _close(conn: Connection, key: str) -> bool:
    return conn.execute(delete(admin_sessions).where(admin_sessions.c.id == key)).rowcount == 1


class AdminSessionTables:
    """Open, read and close admin sessions, on `store`."""

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    async def open_session(
        self, key: str, holder: str, now: datetime, expires_at: datetime
    ) -> None:
        await self.store.write(_open, key, holder, now, expires_at)

    async def session_holder(self, key: str, now: datetime) -> str | None:
        """Who holds the open session `key` (None: signed out, expired or never opened)."""
        return await self.store.read(_holder, key, now)

    async def close_session(self, key: str) -> bool:
        return await self.store.write(_close, key)
