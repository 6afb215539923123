"""Migration 0017 (the transitions table goes; the audit log records every transition) up and
down on both dialects."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from bot.records import RequestRecord, RequestStatus, Settlement
from bot.store import downgrade, open_store, upgrade
from tests.bot.store.conftest import Database
from tests.bot.store.test_migrations import schema_differences, table_names


async def test_0017_drops_transitions_and_its_downgrade_rebuilds_them_from_the_audit_log(
    database: Database, engine: AsyncEngine
) -> None:
    await upgrade(database.url, "0016", schema=database.schema)
    assert "transitions" in await table_names(engine)
    await upgrade(database.url, "0017", schema=database.schema)
    assert "transitions" not in await table_names(engine)

    store = await open_store(database.url, migrate=False, schema=database.schema)
    try:
        now = datetime.now(UTC)
        for request_id in ("r1", "r2"):
            record = RequestRecord(id=request_id, tool_name="t", arguments={}, actor_id="alice")
            await store.create_request(record)
        assert await store.settle(Settlement("r1", RequestStatus.REJECTED, now, by="bob"))
    finally:
        await store.close()

    await downgrade(database.url, "0016", schema=database.schema)
    async with engine.connect() as conn:
        rows = await conn.execute(
            text("SELECT request_id, from_status, to_status, by FROM transitions ORDER BY id")
        )
        assert [tuple(row) for row in rows] == [
            ("r1", None, "pending", "alice"),
            ("r2", None, "pending", "alice"),
            ("r1", "pending", "rejected", "bob"),
        ]

    await upgrade(database.url, schema=database.schema)
    assert "transitions" not in await table_names(engine)
    async with engine.connect() as conn:
        assert await conn.run_sync(schema_differences) == []
