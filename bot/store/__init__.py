"""The store: SQLAlchemy 2.0 schema, the `RequestStore` implementation and its migrations.

Only this package (its migrations too) imports SQLAlchemy; the rest of the core sees the
store's ports (`RequestStore`, the union, and the narrow ones each part declares).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bot.store.engine import DEFAULT_URL
from bot.store.migrate import downgrade, head_revision, upgrade
from bot.store.sql_store import SqlStore

__all__ = ["DEFAULT_URL", "SqlStore", "downgrade", "head_revision", "open_store", "upgrade"]


async def open_store(
    url: str,
    *,
    migrate: bool = True,
    schema: str | None = None,
    connect_args: Mapping[str, Any] | None = None,
) -> SqlStore:
    """A ready store for `url`, migrated to the newest revision first unless `migrate=False`.

    Concurrent upgrades are safe: on PostgreSQL the migration holds an advisory lock, on
    SQLite the write lock. Deployments that migrate as a separate step pass `migrate=False`.
    """
    if migrate:
        await upgrade(url, schema=schema, connect_args=connect_args)
    return SqlStore.from_url(url, schema=schema, connect_args=connect_args)
