"""Migration 0019 (a door request's body hash) up and down on both dialects (its own module:
the migrations' module is near its size limit)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import inspect
from sqlalchemy.engine import Connection
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.records import Asked
from bot.store import downgrade, open_store, upgrade
from bot.store.doors import DoorTables
from tests.bot.store.conftest import Database
from tests.bot.store.test_migrations import row_count, schema_differences


def door_columns(conn: Connection) -> set[str]:
    return {str(column["name"]) for column in inspect(conn).get_columns("door_requests")}


async def test_0019_body_hash_up_and_down(database: Database, engine: AsyncEngine) -> None:
    """0019 adds door_requests.body_hash: a row from before has none, and its key still finds
    its request whatever the body; the downgrade drops the column and keeps the rows."""
    await upgrade(database.url, "0018", schema=database.schema)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    now = datetime.now(UTC)
    old = Asked("r1", "ci", "slack:C1", now, idempotency_key="k1")
    try:
        assert await DoorTables(store).reserve_door(old) == old  # no body_hash: no column named
    finally:
        await store.close()
    await upgrade(database.url, "0019", schema=database.schema)
    async with engine.connect() as conn:
        assert "body_hash" in await conn.run_sync(door_columns)
    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        tables = DoorTables(store)
        again = Asked("r2", "ci", "slack:C1", now, idempotency_key="k1", body_hash="a" * 64)
        assert await tables.reserve_door(again) == old  # the key's first request, hash None
        new = Asked("r3", "ci", "slack:C1", now, idempotency_key="k2", body_hash="b" * 64)
        assert await tables.reserve_door(new) == new
        assert await tables.reserve_door(Asked("r4", "ci", "x", now, idempotency_key="k2")) == new
    finally:
        await store.close()
    await downgrade(database.url, "0018", schema=database.schema)
    async with engine.connect() as conn:
        assert "body_hash" not in await conn.run_sync(door_columns)
    assert await row_count(engine, "door_requests") == 2
    await upgrade(database.url, schema=database.schema)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []
